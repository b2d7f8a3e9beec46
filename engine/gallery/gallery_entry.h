#pragma once
// One image of the gallery: how it was made (the request's settings, the model,
// the policy), what it cost (speed, KV bytes), when, and where its PNG is. The
// window's history and `kvstudio-cli gallery` read these; torch-free.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"

namespace kvs {

struct GalleryEntry {
  int64_t id = 0;        // set by GalleryStore::add; 0 before
  std::string created;   // UTC, ISO-8601 ("2026-11-29T06:12:00Z"); add() fills an empty one
  std::string png_path;  // absolute
  std::string model_name;
  std::string model_dir;  // the bundle folder, absolute
  std::string family;     // the model family ("llamagen", "janus-pro", ...)
  std::string prompt;     // text models; empty for a class
  std::string negative_prompt;
  int64_t class_id = -1;  // -1 for a text model's image
  std::string class_name;
  uint64_t seed = 0;
  std::string policy;  // the spec active when the image finished ("linear:rho=1/4")
  double cfg_scale = 0;
  double temperature = 1;
  int64_t top_k = 0;
  double top_p = 1;
  int64_t steps = 0;  // masked models' decoding steps as asked (0: the model's default)
  int64_t width = 0, height = 0;
  double tokens_per_second = 0;  // per image
  double elapsed_ms = 0;         // the whole run (every image of its batch)
  int64_t kv_bytes_full = 0;
  int64_t kv_bytes_peak = 0;
  int64_t kv_bytes_logical_final = 0;
  int64_t batch_index = 0;   // the image's place in its run's batch (request_json makes the whole batch)
  std::string request_json;  // to_json(request).dump(): what recalls the image
  std::string source;        // who made it: "cli", "window", "compare", ...
};

// The entry for image `image_index` of a finished run, its PNG at `png_path`
// (made absolute here). `created` is now. The family is not in the request or
// the result: the caller sets it (the model summary's `family`).
GalleryEntry gallery_entry(const GenerationRequest& request, const GenerationResult& result, size_t image_index,
                           const std::vector<std::string>& class_names, const std::string& png_path,
                           const std::string& source);

// The request that makes this one image again, as a PNG's metadata recalls it
// (read_generation_png): the stored request with class_ids holding the image's
// class only, or for a text model the prompt with images = 1. Throws
// FormatError when the stored request is not valid.
GenerationRequest gallery_recall_request(const GalleryEntry& entry);

// Every field, request_json as a nested object (`kvstudio-cli gallery list --json`).
nlohmann::json to_json(const GalleryEntry& entry);

}  // namespace kvs
