#pragma once
// `generate` keeps every PNG it writes in the per-user gallery
// (engine/gallery): on by default, off with --no-gallery or KVSTUDIO_GALLERY=off.
// The image comes first: a gallery that cannot be opened or written costs one
// warning line, never the image or the exit code.
#include <optional>
#include <string>
#include <vector>

#include "engine/gallery/gallery_store.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"

namespace kvs::cli {

// False with --no-gallery (`no_gallery_flag`) or KVSTUDIO_GALLERY=off (or 0).
bool gallery_recording_enabled(bool no_gallery_flag);

// Records a run's PNGs one by one, as each is written, so that a kill between
// two images loses neither the first file nor its entry.
class GalleryRecorder {
 public:
  GalleryRecorder(const GenerationRequest& request, const GenerationResult& result,
                  const std::vector<std::string>& class_names, std::string family, bool enabled);
  // Adds image `index`, written at `png_path`. On the first failure prints
  // "kvstudio-cli: warning: ..." to stderr and records nothing more.
  void record(size_t index, const std::string& png_path);

 private:
  const GenerationRequest& request_;
  const GenerationResult& result_;
  const std::vector<std::string>& class_names_;
  std::string family_;
  bool enabled_;
  std::optional<GalleryStore> store_;  // opened at the first image
};

}  // namespace kvs::cli
