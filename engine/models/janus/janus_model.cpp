#include "engine/models/janus/janus_model.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/janus/janus_weights.h"
#include "engine/text/bpe_tokenizer.h"
#include "kernels/linear.h"

namespace kvs::janus {
namespace {

const char* kLanguagePrefix = "language_model.model.";

at::Tensor take(const TensorMap& tensors, const std::string& name, at::Device device, at::ScalarType dtype) {
  const auto it = tensors.find(name);
  if (it == tensors.end()) throw ModelMismatchError("Janus-Pro weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

}  // namespace

at::ScalarType JanusModel::decoder_dtype(at::ScalarType run_dtype) {
  // generation_inference.py casts the whole model to bf16, the VQ decoder
  // included, and decodes there (its upsampling returns to bf16 by name), then
  // converts the images to float32: a bf16 run decodes as the official one
  // does. f16 has no official decode (that upsampling would hand bf16 to f16
  // convolutions), so an f16 run decodes in float32, as f32 runs do. One step
  // stays as VqDecoder does it: the codebook is L2-normalised in float32 and
  // rounded to bf16 once, where F.normalize on the bf16 table rounds the norm
  // too (at most a bf16 rounding apart).
  return run_dtype == at::kBFloat16 ? at::kBFloat16 : at::kFloat;
}

JanusModel JanusModel::from_weights(const JanusConfig& config, const io::SafetensorsReader& weights, at::Device device,
                                    at::ScalarType dtype) {
  config.validate();
  io::check_tensor_set(io::shapes_of(weights), janus_expected_tensors(config), "file " + weights.path());
  io::require_floating_tensors(weights);
  TensorMap generation;
  for (const auto& e : janus_generation_tensors(config)) generation.emplace(e.name, weights.tensor(e.name));
  JanusModel model = from_tensors(config, generation, device, dtype);
  model.vq = std::make_unique<vq::VqDecoder>(config.vq, io::tensors_with_prefix(weights, "gen_vision_model."), device,
                                             decoder_dtype(dtype));
  return model;
}

JanusModel JanusModel::from_tensors(const JanusConfig& config, const TensorMap& tensors, at::Device device,
                                    at::ScalarType dtype) {
  config.validate();
  JanusModel model;
  model.config = config;
  TensorMap language;
  for (const auto& [name, tensor] : tensors)
    if (name.starts_with(kLanguagePrefix)) language.emplace(name.substr(std::string(kLanguagePrefix).size()), tensor);
  model.language = std::make_unique<JanusLanguageModel>(config.language, language, device, dtype);
  model.gen_embed_ = take(tensors, "gen_embed.weight", device, dtype);
  for (int64_t i = 0; i < config.aligner_depth; ++i) {
    const std::string p = "gen_aligner.layers." + std::to_string(2 * i) + ".";
    model.aligner_.emplace_back(take(tensors, p + "weight", device, dtype), take(tensors, p + "bias", device, dtype));
  }
  model.head_in_w_ = take(tensors, "gen_head.output_mlp_projector.weight", device, dtype);
  model.head_in_b_ = take(tensors, "gen_head.output_mlp_projector.bias", device, dtype);
  model.head_out_w_ = take(tensors, "gen_head.vision_head.weight", device, dtype);
  model.head_out_b_ = take(tensors, "gen_head.vision_head.bias", device, dtype);
  return model;
}

JanusModel JanusModel::load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype) {
  JanusConfig config;
  auto reader = io::open_family_weights(bundle, "janus-pro", "architecture.janus", [&] {
    config = janus_config_from_json(bundle.manifest.at("architecture").at("janus"));
  });
  JanusModel model = from_weights(config, *reader, device, dtype);
  model.name = bundle.name();
  const auto encoder = vq::read_bundle_vq_encoder(bundle, config.vq);
  if (!encoder.empty())
    model.encoder = std::make_unique<vq::VqEncoder>(config.vq, encoder,
                                                    reader->tensor("gen_vision_model.quantize.embedding.weight"),
                                                    device);
  auto tokenizer = std::make_shared<text::BpeTokenizer>(text::BpeTokenizer::load(janus_tokenizer_dir(bundle)));
  for (const std::string& tag : {config.image_start_tag, config.pad_tag})
    if (!tokenizer->find_token(tag))
      throw ModelMismatchError("bundle " + bundle.dir + ": the tokenizer has no token " + tag +
                               " that Janus-Pro's generation prompt needs");
  if (tokenizer->vocab_size() > config.language.vocab_size)
    throw ModelMismatchError("bundle " + bundle.dir + ": the tokenizer's " + std::to_string(tokenizer->vocab_size()) +
                             " tokens exceed the language model's vocabulary of " +
                             std::to_string(config.language.vocab_size));
  model.tokenizer = std::move(tokenizer);
  return model;
}

at::Tensor JanusModel::image_embeds(const at::Tensor& ids) const {
  at::Tensor x = at::embedding(gen_embed_, ids.to(gen_embed_.device(), at::kLong));
  for (size_t i = 0; i < aligner_.size(); ++i) {
    if (i > 0) x = at::gelu(x);  // nn.GELU(): the exact (erf) form
    x = kernels::linear(x, aligner_[i].first, aligner_[i].second);
  }
  return x;
}

at::Tensor JanusModel::image_logits(const at::Tensor& hidden) const {
  at::Tensor x = at::gelu(kernels::linear(hidden.to(head_in_w_.scalar_type()), head_in_w_, head_in_b_));
  return kernels::linear(x, head_out_w_, head_out_b_).to(at::kFloat);
}

nlohmann::json janus_manifest(const std::string& name, const JanusConfig& config, const nlohmann::json& provenance) {
  nlohmann::json m = io::family_manifest(name, "janus-pro", "janus", to_json(config), nlohmann::json::object(),
                                         provenance);
  m["files"]["tokenizer"] = "tokenizer";
  // The official generation defaults (generation_inference.py): CFG weight 5,
  // temperature 1, plain multinomial sampling over the whole image vocabulary.
  m["sampling_defaults"] = {{"cfg_scale", 5.0}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}};
  return m;
}

std::string janus_tokenizer_dir(const io::ModelBundle& bundle) {
  std::string sub = "tokenizer";
  const nlohmann::json& files = bundle.manifest.value("files", nlohmann::json::object());
  if (files.contains("tokenizer") && files.at("tokenizer").is_string()) sub = files.at("tokenizer").get<std::string>();
  return (std::filesystem::path(bundle.dir) / sub).string();
}

}  // namespace kvs::janus
