#include "engine/training/mar/mar_bundle_export.h"

#include <ATen/Functions.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/training/checkpoint.h"
#include "engine/training/mar/kl_vae_model.h"
#include "engine/training/mar/mar_trainer.h"

namespace kvs::training {
namespace fs = std::filesystem;

nlohmann::json export_mar_bundle(const BundleExportOptions& options) {
  const at::ScalarType dtype = parse_weights_dtype(options.dtype);
  const std::string vae_dir = (fs::path(options.work_dir) / "kl-vae").string();
  const std::string mar_dir = (fs::path(options.work_dir) / "mar").string();
  for (const auto& [dir, command] : {std::pair<std::string, std::string>{vae_dir, "kl-vae"}, {mar_dir, "mar"}})
    if (!read_checkpoint_manifest(dir))
      throw FileError("folder " + dir + ": no checkpoint here (run `kvstudio-train " + command + "` first)");
  nlohmann::json vae_manifest, mar_manifest_json;
  const auto vae_weights = load_checkpoint_weights(vae_dir, &vae_manifest);
  const auto mar_checkpoint = load_checkpoint_weights(mar_dir, &mar_manifest_json);
  const nlohmann::json& mar_run = mar_manifest_json.at("config");
  KlVaeModelConfig vae_cfg = kl_vae_model_config_from_json(vae_manifest.at("config").at("model"));
  mar::MarConfig mar_cfg = mar::mar_config_from_json(mar_run.at("model"));
  mar::check_compatible(mar_cfg, vae_cfg.arch);
  require_trained_on_tokenizer(mar_run.value("vae", std::string()), vae_manifest, mar_dir, vae_dir, "MAR", "KL VAE",
                               "VAE");
  vae_cfg.arch.latent_scale = mar_run.at("latent_scale").get<double>();
  if (!options.diffusion_steps.empty()) {
    mar::GaussianDiffusion check(options.diffusion_steps);  // rejects a respacing that does not fit
    mar_cfg.num_sampling_steps = options.diffusion_steps;
  }

  // The shipped MAR weights: the EMA copies ("ema.<name>") when kept and asked for.
  const bool has_ema = mar_checkpoint.count(std::string(kEmaPrefix) + "mask_token") > 0;
  const bool ema = options.use_ema && has_ema;
  std::map<std::string, at::Tensor> mar_tensors;
  for (const auto& [name, t] : mar_checkpoint) {
    const bool is_ema = name.rfind(kEmaPrefix, 0) == 0;
    if (is_ema == ema) mar_tensors[is_ema ? name.substr(std::string(kEmaPrefix).size()) : name] = t;
  }
  io::NamedTensors tensors;
  add_prefixed(tensors, mar_tensors, mar::mar_expected_tensors(mar_cfg), "mar.", dtype, mar_dir);
  add_prefixed(tensors, vae_weights, mar::kl_vae_expected_tensors(vae_cfg.arch), "vae.", dtype, vae_dir);

  const std::vector<std::string> class_names = checked_world_class_names(mar_cfg.class_num, "MAR model");
  nlohmann::json provenance = trained_provenance(options, "kvstudio-train export --family mar",
                                                 vae_manifest.at("config").at("image_size").get<int>(), vae_manifest,
                                                 "mar_training", mar_manifest_json);
  provenance["mar_weights"] = ema ? "ema" : "raw";
  provenance["latent_scale"] =
      "1 / std of the VAE's posterior samples on the training images (measured by the MAR run)";
  nlohmann::json manifest = mar::mar_manifest(options.name, mar_cfg, vae_cfg.arch, provenance);
  write_trained_bundle(options, dtype, tensors, class_names, manifest);
  // The bundle must load through the engine's strict loader, as every bundle does.
  mar::MarModel::load(io::ModelBundle::open(options.out_dir), at::kCPU);
  return manifest;
}

}  // namespace kvs::training
