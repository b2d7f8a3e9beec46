#include "engine/session/generation_metadata.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "engine/core/errors.h"

namespace kvs {
namespace {

std::string format_number(double v) {
  std::ostringstream ss;
  ss << v;
  return ss.str();
}

template <typename T>
void read_field(const nlohmann::json& j, const char* key, T* out, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return;
  try {
    *out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw FormatError(where + ": field '" + key + "' has the wrong type (" + j.at(key).type_name() + ")");
  }
}

}  // namespace

std::string class_display_name(int64_t class_id, const std::vector<std::string>& class_names) {
  if (class_id >= 0 && class_id < static_cast<int64_t>(class_names.size()))
    return class_names[static_cast<size_t>(class_id)] + " (class " + std::to_string(class_id) + ")";
  return "class " + std::to_string(class_id);
}

PngTextChunks generation_png_chunks(const GenerationRequest& request, const GenerationResult& result, size_t index,
                                    const std::vector<std::string>& class_names, const std::string& version) {
  const size_t n = result.images.size();
  const bool text = request.is_text();
  const RgbImage& img = result.images.at(index);
  std::ostringstream parameters;
  // Text requests follow the layout other image tools write and read (the
  // prompt, then "Negative prompt: ..." when there is one, then the settings
  // line), so a prompt pasted from a KV Studio PNG works elsewhere too.
  int64_t class_id = 0;
  std::string class_name;
  if (text) {
    parameters << request.prompt << "\n";
    if (!request.negative_prompt.empty()) parameters << "Negative prompt: " << request.negative_prompt << "\n";
  } else {
    class_id = request.class_ids.at(index);
    const bool named = class_id >= 0 && class_id < static_cast<int64_t>(class_names.size());
    class_name = named ? class_names[static_cast<size_t>(class_id)] : "class " + std::to_string(class_id);
    parameters << class_display_name(class_id, class_names) << "\n";
  }
  parameters << "Steps: " << result.tokens.at(index).size()
             << ", Sampler: " << (request.sampling.sample ? "multinomial" : "greedy")
             << ", CFG scale: " << format_number(request.cfg_scale) << ", CFG interval: " << request.cfg_interval
             << ", Seed: " << request.seed << ", Temperature: " << format_number(request.sampling.temperature)
             << ", Top-k: " << request.sampling.top_k << ", Top-p: " << format_number(request.sampling.top_p)
             << ", Size: " << img.width << "x" << img.height << ", Batch size: " << n << ", Batch pos: " << index
             << ", Model: " << result.model_name << ", KV policy: " << result.policy;
  if (request.finishes_picture())
    parameters << ", Finished from: " << std::filesystem::path(request.from_image).filename().string()
               << ", Kept rows: " << request.keep_rows;
  parameters << ", Version: KV Studio " << version;
  const std::string generator = "KV Studio " + version;
  nlohmann::json meta = {{"generator", generator},
                         {"request", to_json(request)},
                         {"batch_index", index},
                         {"model_name", result.model_name},
                         {"device", result.device},
                         {"grid", {result.grid_height, result.grid_width}},
                         {"tokens", result.tokens.at(index)},
                         {"tokens_per_second", result.tokens_per_second},
                         {"kv_bytes_peak", result.kv_bytes_peak},
                         {"kv_policy", result.policy}};
  if (!text) {
    meta["class_id"] = class_id;
    meta["class_name"] = class_name;
  }
  return {{"parameters", parameters.str()}, {"kvstudio", meta.dump()}};
}

GenerationRequest request_from_json(const nlohmann::json& j) {
  const std::string where = "kvstudio metadata";
  if (!j.is_object()) throw FormatError(where + ": request is not a JSON object");
  GenerationRequest r;
  read_field(j, "model", &r.model_path, where);
  read_field(j, "class_ids", &r.class_ids, where);
  read_field(j, "seed", &r.seed, where);
  read_field(j, "cfg_scale", &r.cfg_scale, where);
  read_field(j, "cfg_interval", &r.cfg_interval, where);
  read_field(j, "steps", &r.steps, where);
  read_field(j, "cfg_schedule", &r.cfg_schedule, where);
  read_field(j, "temperature", &r.sampling.temperature, where);
  read_field(j, "top_k", &r.sampling.top_k, where);
  read_field(j, "top_p", &r.sampling.top_p, where);
  read_field(j, "sample", &r.sampling.sample, where);
  read_field(j, "device", &r.device, where);
  std::string policy_text;
  read_field(j, "policy", &policy_text, where);
  if (!policy_text.empty()) {
    // The PNG is where this spec comes in: parsed here, once.
    try {
      r.policy = parse_policy_spec(policy_text);
    } catch (const InvalidArgumentError& e) {
      throw FormatError(where + ": field 'policy': " + e.what());
    }
  }
  read_field(j, "dtype", &r.dtype, where);
  read_field(j, "prompt", &r.prompt, where);
  read_field(j, "negative_prompt", &r.negative_prompt, where);
  read_field(j, "images", &r.images, where);
  read_field(j, "image_size", &r.image_size, where);
  read_field(j, "from_image", &r.from_image, where);
  read_field(j, "keep_rows", &r.keep_rows, where);
  return r;
}

RecalledImage read_generation_png(const std::string& path) {
  PngContents png = read_png(path);
  RecalledImage out;
  out.image = std::move(png.image);
  std::string meta_text;
  for (const auto& [key, value] : png.text) {
    if (key == "kvstudio") meta_text = value;
    if (key == "parameters") out.parameters_text = value;
  }
  if (meta_text.empty())
    throw FormatError("file " + path + " was not made by KV Studio (it has no 'kvstudio' metadata chunk)");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(meta_text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + path + ": the 'kvstudio' metadata chunk is not valid JSON (" + std::string(e.what()) +
                      ")");
  }
  if (!meta.is_object() || !meta.contains("request"))
    throw FormatError("file " + path + ": the 'kvstudio' metadata chunk has no request");
  const std::string where = "file " + path;
  out.request = request_from_json(meta.at("request"));
  if (out.request.is_text()) {
    // The request that makes this image: one image of the prompt, no class.
    out.request.images = 1;
    out.request.class_ids.clear();
    out.class_id = -1;
  } else {
    read_field(meta, "class_id", &out.class_id, where);
    if (!meta.contains("class_id") && !out.request.class_ids.empty()) out.class_id = out.request.class_ids.front();
    out.request.class_ids = {out.class_id};
    read_field(meta, "class_name", &out.class_name, where);
  }
  read_field(meta, "model_name", &out.model_name, where);
  read_field(meta, "kv_policy", &out.kv_policy, where);
  return out;
}

}  // namespace kvs
