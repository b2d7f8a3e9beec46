#include "engine/training/llamagen/bundle_export.h"

#include <ATen/Functions.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_weights.h"
#include "engine/training/bundle_start.h"
#include "engine/training/checkpoint.h"
#include "engine/training/llamagen/vq_model.h"
#include "engine/training/world_dataset.h"

namespace kvs::training {
namespace fs = std::filesystem;

nlohmann::json export_llamagen_bundle(const BundleExportOptions& options) {
  const at::ScalarType dtype = parse_weights_dtype(options.dtype);
  const std::string vq_dir = (fs::path(options.work_dir) / "vq").string();
  const std::string gpt_dir = (fs::path(options.work_dir) / "gpt").string();
  nlohmann::json vq_manifest, gpt_manifest;
  const auto vq_weights = load_checkpoint_weights(vq_dir, &vq_manifest);
  const auto gpt_weights = load_checkpoint_weights(gpt_dir, &gpt_manifest);
  const VqModelConfig vq_cfg = vq_model_config_from_json(vq_manifest.at("config").at("model"));
  const llamagen::GptConfig gpt_cfg = llamagen::gpt_config_from_json(gpt_manifest.at("config").at("model"));
  require_trained_on_tokenizer(gpt_manifest.at("config").value("tokenizer", std::string()), vq_manifest, gpt_dir,
                               vq_dir, "the GPT", "tokenizer", "tokenizer");

  io::NamedTensors tensors;
  add_prefixed(tensors, gpt_weights, llamagen::gpt_expected_tensors(gpt_cfg), "gpt.", dtype, gpt_dir);
  add_prefixed(tensors, vq_weights, llamagen::vq_decoder_expected_tensors(vq_cfg.arch), "vq.", dtype, vq_dir);

  const std::vector<std::string> class_names = checked_world_class_names(gpt_cfg.num_classes, "GPT");
  const int image_size = vq_manifest.at("config").at("image_size").get<int>();
  nlohmann::json manifest = llamagen::llamagen_manifest(options.name, gpt_cfg, vq_cfg.arch,
                                                        trained_provenance(options, "kvstudio-train export", image_size,
                                                                           vq_manifest, "gpt_training", gpt_manifest));
  write_trained_bundle(options, dtype, tensors, class_names, manifest);
  if (vq_cfg.encoder_levels() == vq_cfg.arch.decoder_ch_mult) {
    std::map<std::string, at::Tensor> encoder;
    for (const auto& e : llamagen::vq_encoder_expected_tensors(vq_cfg.arch, vq_cfg.encoder_levels()))
      encoder.emplace(e.name, vq_weights.at(e.name));
    vq::write_bundle_vq_encoder(options.out_dir, vq_cfg.arch, encoder, dtype);
  }
  // The bundle must load through the engine's strict loader, as every bundle does.
  llamagen::LlamaGenModel::load(io::ModelBundle::open(options.out_dir), at::kCPU);
  return manifest;
}

int64_t export_vq_encoder_into_bundle(const std::string& work_dir, const std::string& bundle_dir,
                                      const std::string& dtype_name) {
  const at::ScalarType dtype = parse_weights_dtype(dtype_name);
  const std::string vq_dir = (fs::path(work_dir) / "vq").string();
  nlohmann::json vq_manifest;
  const auto vq_weights = load_checkpoint_weights(vq_dir, &vq_manifest);
  const BundleVq bundle = read_bundle_vq(bundle_dir);
  const nlohmann::json& run_config = vq_manifest.at("config");
  if (run_config.value("decoder_from", std::string()) != bundle.fingerprint)
    throw ModelMismatchError("the encoder of " + vq_dir + " was not fitted to the decoder of " + bundle.origin +
                             " (fit one with `kvstudio-train vq --decoder-from " + bundle_dir + "`)");
  std::map<std::string, at::Tensor> encoder;
  for (const auto& e : llamagen::vq_encoder_expected_tensors(bundle.config.arch, bundle.config.encoder_levels())) {
    auto it = vq_weights.find(e.name);
    if (it == vq_weights.end()) throw ModelMismatchError(vq_dir + ": the checkpoint has no " + e.name);
    encoder.emplace(e.name, it->second);
  }
  vq::write_bundle_vq_encoder(bundle_dir, bundle.config.arch, encoder, dtype);
  // How the encoder was made, beside the rest of the bundle's training record.
  io::ModelBundle written = io::ModelBundle::open(bundle_dir);
  written.manifest["provenance"]["vq_encoder_training"] = {{"commands",
                                                            vq_manifest.value("commands", nlohmann::json::array())},
                                                           {"steps", vq_manifest.value("step", int64_t{0})},
                                                           {"train_seconds", vq_manifest.value("train_seconds", 0.0)},
                                                           {"fitted_to", "the bundle's frozen decoder and codebook"}};
  io::write_bundle_manifest(written.dir, written.manifest);
  return static_cast<int64_t>(encoder.size());
}

}  // namespace kvs::training
