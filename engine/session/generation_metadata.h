#pragma once
// What a KV Studio PNG remembers about how it was made, written by the CLI and the
// window alike (one writer, one reader): a human-readable "parameters" text chunk
// in the style of local image-generation tools, and a "kvstudio" JSON chunk with
// the full request (engine/image/png_file.h stores both as iTXt). Torch-free.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/image/png_file.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"

namespace kvs {

// "name (class N)" when the model names its classes, else "class N".
std::string class_display_name(int64_t class_id, const std::vector<std::string>& class_names);

// The two text chunks for image `index` of a finished generation. A text
// request's "parameters" chunk is the prompt (any number of lines), then
// "Negative prompt: ..." when there is one, then the settings line; a class
// request's starts with the class's display name.
PngTextChunks generation_png_chunks(const GenerationRequest& request, const GenerationResult& result, size_t index,
                                    const std::vector<std::string>& class_names, const std::string& version);

// Inverse of to_json(GenerationRequest); missing fields keep their defaults.
// Throws FormatError for fields of the wrong type.
GenerationRequest request_from_json(const nlohmann::json& j);

struct RecalledImage {
  RgbImage image;
  // The request that makes this one image: class_ids holds its class only, or
  // for a text model the prompt and negative prompt with images = 1 and no class.
  GenerationRequest request;
  int64_t class_id = 0;  // -1 for a text model's image
  std::string class_name;
  std::string model_name;
  std::string kv_policy;        // the policy active when the image finished
  std::string parameters_text;  // the human-readable chunk
};

// Reads a PNG written by KV Studio. Throws FileError / FormatError (also when the
// PNG has no "kvstudio" chunk: "… was not made by KV Studio").
RecalledImage read_generation_png(const std::string& path);

}  // namespace kvs
