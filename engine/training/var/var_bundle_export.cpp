#include "engine/training/var/var_bundle_export.h"

#include <ATen/Functions.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_weights.h"
#include "engine/training/checkpoint.h"
#include "engine/training/var/var_vae_model.h"
#include "engine/training/world_dataset.h"

namespace kvs::training {
namespace fs = std::filesystem;

nlohmann::json export_var_bundle(const BundleExportOptions& options) {
  const at::ScalarType dtype = parse_weights_dtype(options.dtype);
  const std::string vae_dir = (fs::path(options.work_dir) / "var-vae").string();
  const std::string var_dir = (fs::path(options.work_dir) / "var").string();
  nlohmann::json vae_manifest, var_manifest_json;
  const auto vae_weights = load_checkpoint_weights(vae_dir, &vae_manifest);
  const auto var_weights = load_checkpoint_weights(var_dir, &var_manifest_json);
  const VarVaeModelConfig vae_cfg = var_vae_model_config_from_json(vae_manifest.at("config").at("model"));
  const var::VarConfig var_cfg = var::var_config_from_json(var_manifest_json.at("config").at("model"));
  var::check_compatible(var_cfg, vae_cfg.arch);
  require_trained_on_tokenizer(var_manifest_json.at("config").value("tokenizer", std::string()), vae_manifest, var_dir,
                               vae_dir, "the transformer", "VQVAE", "VQVAE");

  io::NamedTensors tensors;
  add_prefixed(tensors, var_weights, var::var_expected_tensors(var_cfg), "var.", dtype, var_dir);
  add_prefixed(tensors, vae_weights, var::vqvae_expected_tensors(vae_cfg.arch), "vae.", dtype, vae_dir);

  const std::vector<std::string> class_names = checked_world_class_names(var_cfg.num_classes, "transformer");
  nlohmann::json manifest = var::var_manifest(options.name, var_cfg, vae_cfg.arch,
                                              trained_provenance(options, "kvstudio-train export --family var",
                                                                 vae_manifest.at("config").at("image_size").get<int>(),
                                                                 vae_manifest, "var_training", var_manifest_json));
  write_trained_bundle(options, dtype, tensors, class_names, manifest);
  // The bundle must load through the engine's strict loader, as every bundle does.
  var::VarModel::load(io::ModelBundle::open(options.out_dir), at::kCPU);
  return manifest;
}

}  // namespace kvs::training
