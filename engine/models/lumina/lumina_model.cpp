#include "engine/models/lumina/lumina_model.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/lumina/lumina_weights.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::lumina {

LuminaModel LuminaModel::from_weights(const LuminaConfig& config, const io::SafetensorsReader& weights,
                                      at::Device device, at::ScalarType dtype) {
  config.validate();
  io::check_tensor_set(io::shapes_of(weights), lumina_expected_tensors(config), "file " + weights.path());
  io::require_floating_tensors(weights);
  LuminaModel model;
  model.config = config;
  TensorMap lm;
  for (const auto& e : chameleon_expected_tensors(config.lm)) lm.emplace(e.name, weights.tensor(e.name));
  model.lm = std::make_unique<ChameleonLanguageModel>(config.lm, lm, device, dtype);
  model.vqgan = std::make_unique<ChameleonVqgan>(config.vqgan, io::tensors_with_prefix(weights, "vqgan."), device,
                                                 at::kFloat);
  return model;
}

void LuminaModel::attach_tokenizer(const std::string& tokenizer_dir) {
  auto loaded = std::make_shared<text::BpeTokenizer>(text::BpeTokenizer::load(tokenizer_dir));
  if (loaded->vocab_size() > config.lm.vocab_size)
    throw ModelMismatchError("tokenizer " + tokenizer_dir + ": its " + std::to_string(loaded->vocab_size()) +
                             " tokens exceed the language model's vocabulary of " +
                             std::to_string(config.lm.vocab_size));
  vocabulary = ImageVocabulary::from_tokenizer(*loaded, config.ids, config.vqgan.n_embed);
  tokenizer = std::move(loaded);
}

LuminaModel LuminaModel::load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype) {
  LuminaConfig config;
  auto reader = io::open_family_weights(bundle, "lumina-mgpt", "architecture.chameleon or tokenizer", [&] {
    config = lumina_config_from_json(bundle.manifest.at("architecture").at("chameleon"),
                                     bundle.manifest.at("tokenizer"));
  });
  LuminaModel model = from_weights(config, *reader, device, dtype);
  model.name = bundle.name();
  try {
    model.attach_tokenizer(lumina_tokenizer_dir(bundle));
  } catch (const ModelMismatchError& e) {
    throw ModelMismatchError("bundle " + bundle.dir + ": " + e.what());
  }
  return model;
}

at::Tensor LuminaModel::decode_image_tokens(const at::Tensor& ids) const {
  if (!vocabulary) throw ModelMismatchError("model " + name + " has no tokenizer to map image tokens to VQ codes");
  return vqgan->decode_codes(vocabulary->codes_of(ids));
}

nlohmann::json lumina_manifest(const std::string& name, const LuminaConfig& config, const nlohmann::json& provenance) {
  nlohmann::json m = io::family_manifest(name, "lumina-mgpt", "chameleon", to_json(config.lm, config.image_size),
                                         to_json(config.vqgan), provenance);
  m["files"]["tokenizer"] = "tokenizer";
  // The official example settings (README, generate_examples/generate.py): CFG 4,
  // image top-k 2000, temperature 1.
  m["sampling_defaults"] = {{"cfg_scale", 4.0}, {"temperature", 1.0}, {"top_k", 2000}, {"top_p", 1.0}};
  return m;
}

std::string lumina_tokenizer_dir(const io::ModelBundle& bundle) {
  std::string sub = "tokenizer";
  const nlohmann::json& files = bundle.manifest.value("files", nlohmann::json::object());
  if (files.contains("tokenizer") && files.at("tokenizer").is_string()) sub = files.at("tokenizer").get<std::string>();
  return (std::filesystem::path(bundle.dir) / sub).string();
}

}  // namespace kvs::lumina
