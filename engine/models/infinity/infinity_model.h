#pragma once
// A loaded Infinity text-to-image pipeline: the T5 encoder and its SentencePiece
// tokenizer, the Infinity transformer and the BSQ-VAE decoder. From a bundle
// (model.json, weights.safetensors with the three parts under "t5.",
// "infinity." and "vae.", and tokenizer/spiece.model).
#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/infinity/bsq_decoder.h"
#include "engine/models/infinity/infinity_config.h"
#include "engine/models/infinity/infinity_generation.h"
#include "engine/models/infinity/infinity_transformer.h"
#include "engine/models/infinity/t5_config.h"
#include "engine/models/infinity/t5_encoder.h"

namespace kvs::io {
class SafetensorsReader;
}
namespace kvs::text {
class SentencePieceTokenizer;
}

namespace kvs::infinity {

// The three parts' configs and the pixel budget the model was trained for.
struct InfinityModelConfig {
  InfinityConfig transformer;
  T5Config t5;
  BsqVaeConfig vae;
  std::string pixel_budget = "1M";  // '0.06M' | '0.25M' | '0.60M' | '1M' (the schedule's scales)
  // Pixels per token side of the last scale (the VAE's patch size, x2 with spatial patchify).
  int64_t pixels_per_token() const;
  void validate() const;
};

nlohmann::json to_json(const InfinityModelConfig& config);
// From model.json's architecture.infinity, architecture.t5 and tokenizer (the VAE) sections.
InfinityModelConfig infinity_model_config_from_json(const nlohmann::json& architecture, const nlohmann::json& vae);

// An image size the model can write: a template, a pixel budget and the pixels.
struct InfinityImageSize {
  const ScaleTemplate* scale_template = nullptr;
  std::string pixel_budget;
  int64_t width = 0, height = 0;
  std::string text() const { return std::to_string(width) + "x" + std::to_string(height); }
};
// Every size: the model's pixel budget over the 15 templates first, then the
// other budgets' square sizes.
std::vector<InfinityImageSize> infinity_image_sizes(const InfinityModelConfig& config);
// "WIDTHxHEIGHT" (or "" for the model's square size) -> the size;
// InvalidArgumentError listing the sizes for any other.
InfinityImageSize parse_infinity_image_size(const InfinityModelConfig& config, const std::string& text);
InfinitySchedule schedule_of(const InfinityImageSize& size);

struct InfinityModel {
  std::string name;
  InfinityModelConfig config;
  std::unique_ptr<InfinityTransformer> transformer;
  std::unique_ptr<T5Encoder> t5;
  std::unique_ptr<BsqDecoder> decoder;
  std::shared_ptr<const text::SentencePieceTokenizer> tokenizer;

  // Strictly checks every tensor (missing, unexpected, shape, floating dtype)
  // before building. The transformer and T5 run in `dtype`; the decoder in float32.
  static InfinityModel from_weights(const InfinityModelConfig& config, const io::SafetensorsReader& weights,
                                    at::Device device, at::ScalarType dtype);
  static InfinityModel load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype);

  // The T5 rows of texts (encode_prompt per text: SentencePiece ids + </s>, at most 512).
  TextRows encode_texts(const std::vector<std::string>& texts) const;
  // Summed codes [B, d, H, W] -> images [B, 3, H', W'] in [-1, 1] (float32).
  at::Tensor decode(const at::Tensor& summed_codes) const;
};

// Bundle manifest of an Infinity model (architecture.infinity + .t5, tokenizer =
// the BSQ VAE; tokenizer/spiece.model beside it).
nlohmann::json infinity_manifest(const std::string& name, const InfinityModelConfig& config,
                                 const nlohmann::json& provenance);
std::string infinity_tokenizer_file(const io::ModelBundle& bundle);

}  // namespace kvs::infinity
