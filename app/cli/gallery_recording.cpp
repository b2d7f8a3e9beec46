#include "app/cli/gallery_recording.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <utility>

#include "engine/gallery/gallery_location.h"

namespace kvs::cli {

bool gallery_recording_enabled(bool no_gallery_flag) {
  if (no_gallery_flag) return false;
  const char* env = std::getenv("KVSTUDIO_GALLERY");
  const std::string value = env ? env : "";
  return value != "off" && value != "0";
}

GalleryRecorder::GalleryRecorder(const GenerationRequest& request, const GenerationResult& result,
                                 const std::vector<std::string>& class_names, std::string family, bool enabled)
    : request_(request), result_(result), class_names_(class_names), family_(std::move(family)), enabled_(enabled) {}

void GalleryRecorder::record(size_t index, const std::string& png_path) {
  if (!enabled_) return;
  try {
    if (!store_) store_.emplace(GalleryStore::open(gallery_database_path(default_gallery_dir())));
    GalleryEntry entry = gallery_entry(request_, result_, index, class_names_, png_path, "cli");
    entry.family = family_;
    store_->add(entry);
  } catch (const std::exception& e) {
    // One line, then silence: the PNG is written, and the run succeeded.
    std::string what = e.what();
    std::fprintf(stderr, "kvstudio-cli: warning: not kept in the gallery (--no-gallery turns it off): %s\n",
                 what.substr(0, what.find('\n')).c_str());
    enabled_ = false;
  }
}

}  // namespace kvs::cli
