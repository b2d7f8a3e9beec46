#include "engine/models/infinity/infinity_model.h"

#include <ATen/Functions.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/infinity/infinity_weights.h"
#include "engine/text/sentencepiece_tokenizer.h"

namespace kvs::infinity {

int64_t InfinityModelConfig::pixels_per_token() const {
  return vae.patch_size * (transformer.spatial_patchify ? 2 : 1);
}

void InfinityModelConfig::validate() const {
  transformer.validate();
  t5.validate();
  vae.validate();
  if (transformer.text_channels != t5.d_model)
    throw InvalidArgumentError("Infinity config: text_channels " + std::to_string(transformer.text_channels) +
                               " differs from the T5 encoder's width " + std::to_string(t5.d_model));
  if (transformer.codebook_dim != vae.codebook_dim)
    throw InvalidArgumentError("Infinity config: the transformer's codebook_dim " +
                               std::to_string(transformer.codebook_dim) + " differs from the VAE's " +
                               std::to_string(vae.codebook_dim));
  if (transformer.spatial_patchify != vae.spatial_patchify)
    throw InvalidArgumentError("Infinity config: the transformer and the VAE disagree on apply_spatial_patchify");
  // A known budget (scale_schedule refuses others), with no more scales than lvl_embed has rows.
  if (static_cast<int64_t>(scale_schedule(nearest_template(1.0), pixel_budget).size()) > transformer.level_embeddings)
    throw InvalidArgumentError("Infinity config: pixel budget " + pixel_budget +
                               " has more scales than lvl_embed rows");
}

nlohmann::json to_json(const InfinityModelConfig& c) {
  nlohmann::json j = c.transformer.to_json();
  j["pixel_budget"] = c.pixel_budget;
  return {{"infinity", j}, {"t5", c.t5.to_json()}};
}

InfinityModelConfig infinity_model_config_from_json(const nlohmann::json& architecture, const nlohmann::json& vae) {
  InfinityModelConfig c;
  c.transformer = InfinityConfig::from_json(architecture.at("infinity"));
  c.pixel_budget = architecture.at("infinity").value("pixel_budget", c.pixel_budget);
  c.t5 = T5Config::from_hf_json(architecture.at("t5"));
  c.vae = BsqVaeConfig::from_json(vae);
  c.validate();
  return c;
}

std::vector<InfinityImageSize> infinity_image_sizes(const InfinityModelConfig& config) {
  std::vector<InfinityImageSize> sizes;
  const int64_t px = config.pixels_per_token();
  auto add = [&](const ScaleTemplate& t, const std::string& budget) {
    const Grid last = scale_schedule(t, budget).back();
    sizes.push_back({&t, budget, last[1] * px, last[0] * px});
  };
  for (const ScaleTemplate& t : scale_templates()) add(t, config.pixel_budget);
  for (const auto& [budget, scales] : pixel_budgets()) {
    (void)scales;
    if (budget != config.pixel_budget && static_cast<int64_t>(scale_schedule(nearest_template(1.0), budget).size()) <=
                                             config.transformer.level_embeddings)
      add(nearest_template(1.0), budget);
  }
  return sizes;
}

InfinityImageSize parse_infinity_image_size(const InfinityModelConfig& config, const std::string& text) {
  const std::vector<InfinityImageSize> sizes = infinity_image_sizes(config);
  if (text.empty()) return sizes.front();  // the model's budget at 1:1 (the first template)
  std::string known;
  for (const InfinityImageSize& s : sizes) {
    if (s.text() == text) return s;
    known += (known.empty() ? "" : ", ") + s.text();
  }
  throw InvalidArgumentError("image size " + text + " is not one Infinity writes; this model's sizes: " + known);
}

InfinitySchedule schedule_of(const InfinityImageSize& size) {
  InfinitySchedule s;
  s.scale_template = *size.scale_template;
  s.grids = scale_schedule(*size.scale_template, size.pixel_budget);
  return s;
}

InfinityModel InfinityModel::from_weights(const InfinityModelConfig& config, const io::SafetensorsReader& weights,
                                          at::Device device, at::ScalarType dtype) {
  config.validate();
  io::check_tensor_set(io::shapes_of(weights), infinity_expected_tensors(config.transformer, config.t5, config.vae),
                       "file " + weights.path());
  io::require_floating_tensors(weights);
  InfinityModel model;
  model.config = config;
  model.transformer = std::make_unique<InfinityTransformer>(config.transformer,
                                                            io::tensors_with_prefix(weights, "infinity."), device,
                                                            dtype);
  model.t5 = std::make_unique<T5Encoder>(config.t5, io::tensors_with_prefix(weights, "t5."), device, dtype);
  model.decoder = std::make_unique<BsqDecoder>(config.vae, io::tensors_with_prefix(weights, "vae."), device,
                                               at::kFloat);
  return model;
}

InfinityModel InfinityModel::load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype) {
  InfinityModelConfig config;
  auto reader = io::open_family_weights(bundle, "infinity", "architecture.infinity, architecture.t5 or tokenizer", [&] {
    config = infinity_model_config_from_json(bundle.manifest.at("architecture"), bundle.manifest.at("tokenizer"));
  });
  InfinityModel model = from_weights(config, *reader, device, dtype);
  model.name = bundle.name();
  auto tokenizer = std::make_shared<text::SentencePieceTokenizer>(infinity_tokenizer_file(bundle));
  if (tokenizer->vocab_size() > config.t5.vocab_size)
    throw ModelMismatchError("bundle " + bundle.dir + ": its tokenizer's " + std::to_string(tokenizer->vocab_size()) +
                             " pieces exceed the T5 encoder's vocabulary of " + std::to_string(config.t5.vocab_size));
  model.tokenizer = std::move(tokenizer);
  return model;
}

TextRows InfinityModel::encode_texts(const std::vector<std::string>& texts) const {
  TextRows out;
  std::vector<at::Tensor> rows;
  for (const std::string& text : texts) {
    const std::vector<int64_t> ids = tokenizer->encode_t5(text);
    rows.push_back(t5->encode(at::tensor(ids, at::TensorOptions().dtype(at::kLong))).to(at::kFloat));
    out.lengths.push_back(static_cast<int64_t>(ids.size()));
  }
  out.rows = rows.empty() ? at::Tensor() : at::cat(rows, 0);
  return out;
}

at::Tensor InfinityModel::decode(const at::Tensor& summed_codes) const {
  return decoder->decode(summed_codes.to(at::kFloat));
}

nlohmann::json infinity_manifest(const std::string& name, const InfinityModelConfig& config,
                                 const nlohmann::json& provenance) {
  nlohmann::json m = io::family_manifest(name, "infinity", "infinity", to_json(config).at("infinity"),
                                         config.vae.to_json(), provenance);
  m["architecture"]["t5"] = config.t5.to_json();
  m["files"]["tokenizer"] = "tokenizer/spiece.model";
  // gen_one_img's defaults as the official scripts call it (scripts/infer.sh): CFG 3, tau 0.5, top-k 900, top-p 0.97.
  m["sampling_defaults"] = {{"cfg_scale", 3.0}, {"temperature", 0.5}, {"top_k", 900}, {"top_p", 0.97}};
  return m;
}

std::string infinity_tokenizer_file(const io::ModelBundle& bundle) {
  std::string sub = "tokenizer/spiece.model";
  const nlohmann::json& files = bundle.manifest.value("files", nlohmann::json::object());
  if (files.contains("tokenizer") && files.at("tokenizer").is_string()) sub = files.at("tokenizer").get<std::string>();
  return (std::filesystem::path(bundle.dir) / sub).string();
}

}  // namespace kvs::infinity
