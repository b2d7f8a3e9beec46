#include "engine/gallery/gallery_entry.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/gallery/gallery_store.h"
#include "engine/session/generation_metadata.h"

namespace kvs {

GalleryEntry gallery_entry(const GenerationRequest& request, const GenerationResult& result, size_t image_index,
                           const std::vector<std::string>& class_names, const std::string& png_path,
                           const std::string& source) {
  if (image_index >= result.images.size())
    throw InvalidArgumentError("gallery entry for image " + std::to_string(image_index) + " of a run of " +
                               std::to_string(result.images.size()) + " images");
  const RgbImage& image = result.images[image_index];
  GalleryEntry e;
  e.created = gallery_timestamp_now();
  // Absolute paths: the gallery is read from any working folder (the window, another shell).
  std::error_code ec;
  const std::filesystem::path png = std::filesystem::absolute(png_path, ec);
  e.png_path = (ec ? std::filesystem::path(png_path) : png).lexically_normal().string();
  const std::filesystem::path model = std::filesystem::absolute(request.model_path, ec);
  e.model_dir = request.model_path.empty()
                    ? ""
                    : (ec ? std::filesystem::path(request.model_path) : model).lexically_normal().string();
  e.model_name = result.model_name;
  if (request.is_text()) {
    e.prompt = request.prompt;
    e.negative_prompt = request.negative_prompt;
    e.class_id = -1;
  } else {
    e.class_id = request.class_ids.at(image_index);
    // The name the PNG's metadata gives (generation_metadata.cpp), so that both read alike.
    const bool named = e.class_id >= 0 && e.class_id < static_cast<int64_t>(class_names.size());
    e.class_name = named ? class_names[static_cast<size_t>(e.class_id)] : "class " + std::to_string(e.class_id);
  }
  e.seed = request.seed;
  // The spec active at the end: a mid-run change is what the image was finished with.
  e.policy = result.policy.empty() ? request.policy.text() : result.policy;
  e.cfg_scale = request.cfg_scale;
  e.temperature = request.sampling.temperature;
  e.top_k = request.sampling.top_k;
  e.top_p = request.sampling.top_p;
  e.steps = request.steps;
  e.width = image.width;
  e.height = image.height;
  e.tokens_per_second = result.tokens_per_second;
  e.elapsed_ms = result.elapsed_ms;
  e.kv_bytes_full = result.kv_bytes_full;
  e.kv_bytes_peak = result.kv_bytes_peak;
  e.kv_bytes_logical_final = result.kv_bytes_logical_final;
  e.batch_index = static_cast<int64_t>(image_index);
  e.request_json = to_json(request).dump();
  e.source = source;
  return e;
}

GenerationRequest gallery_recall_request(const GalleryEntry& e) {
  const std::string where = "gallery entry " + std::to_string(e.id);
  const nlohmann::json j = nlohmann::json::parse(e.request_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw FormatError(where + ": its request is not valid JSON");
  GenerationRequest request;
  try {
    request = request_from_json(j);
  } catch (const FormatError& error) {
    throw FormatError(where + ": " + error.what());
  }
  if (request.is_text()) {
    request.images = 1;
    request.class_ids.clear();
  } else {
    request.class_ids = {e.class_id};
  }
  return request;
}

nlohmann::json to_json(const GalleryEntry& e) {
  nlohmann::json request = nullptr;
  if (!e.request_json.empty()) {
    // A request that does not parse is shown as it is stored rather than lost.
    request = nlohmann::json::parse(e.request_json, nullptr, /*allow_exceptions=*/false);
    if (request.is_discarded()) request = e.request_json;
  }
  return {{"id", e.id},
          {"created", e.created},
          {"png_path", e.png_path},
          {"model_name", e.model_name},
          {"model_dir", e.model_dir},
          {"family", e.family},
          {"prompt", e.prompt},
          {"negative_prompt", e.negative_prompt},
          {"class_id", e.class_id},
          {"class_name", e.class_name},
          {"seed", e.seed},
          {"policy", e.policy},
          {"cfg_scale", e.cfg_scale},
          {"temperature", e.temperature},
          {"top_k", e.top_k},
          {"top_p", e.top_p},
          {"steps", e.steps},
          {"width", e.width},
          {"height", e.height},
          {"tokens_per_second", e.tokens_per_second},
          {"elapsed_ms", e.elapsed_ms},
          {"kv_bytes_full", e.kv_bytes_full},
          {"kv_bytes_peak", e.kv_bytes_peak},
          {"kv_bytes_logical_final", e.kv_bytes_logical_final},
          {"batch_index", e.batch_index},
          {"request", request},
          {"source", e.source}};
}

}  // namespace kvs
