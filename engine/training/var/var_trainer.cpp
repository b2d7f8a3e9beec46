#include "engine/training/var/var_trainer.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/models/var/var_transformer.h"
#include "engine/models/var/var_weights.h"
#include "engine/training/checkpoint.h"
#include "engine/training/token_dataset.h"
#include "engine/training/var/var_vae_model.h"
#include "engine/training/world_data.h"

namespace kvs::training {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool no_weight_decay(const std::string& name) {
  // upstream filter_params' nowd_keys that exist in VAR (plus every 1-D tensor).
  return name == "pos_start" || name == "pos_1LC" || name == "lvl_embed.weight" || ends_with(name, "scale_mul_1H11") ||
         ends_with(name, "ada_gss");
}

}  // namespace

void fit_var_to_tokenizer(VarTrainSetup& setup) {
  const auto manifest = read_checkpoint_manifest(setup.vae_run_dir);
  if (!manifest)
    throw FileError("folder " + setup.vae_run_dir + ": no trained VQVAE here (run `kvstudio-train var-vae` first)");
  const VarVaeModelConfig vae = var_vae_model_config_from_json(manifest->at("config").at("model"));
  setup.model.vocab_size = vae.arch.vocab_size;
  setup.model.cvae = vae.arch.z_channels;
  setup.model.patch_nums = vae.arch.v_patch_nums;
}

ParameterSet init_var_parameters(const var::VarConfig& c, uint64_t seed, at::Device device, double init_adaln_gamma) {
  c.validate();
  const double init_std = std::sqrt(1.0 / static_cast<double>(c.embed_dim) / 3.0);  // init_std < 0: automated
  const double depth_div = std::sqrt(2.0 * static_cast<double>(c.depth));
  const int64_t C = c.embed_dim;
  // trunc_normal_(std) truncates at +-2 absolute, far outside +-2 std for these widths:
  // a plain normal has the same distribution up to rounding.
  ParameterSet params =
      init_parameters(var::var_expected_tensors(c), seed, device,
                      [&](const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen) {
                        if (ends_with(name, "scale_mul_1H11")) return at::full(shape, std::log(4.0));
                        if (ends_with(name, ".bias") || ends_with(name, "_bias")) return at::zeros(shape);
                        at::Tensor w = at::normal(0.0, init_std, shape, gen);
                        if (name == "head.weight") return w * 0.02;              // init_head
                        if (name == "head_nm.ada_lin.1.weight") return w * 0.5;  // init_adaln
                        if (ends_with(name, "attn.proj.weight") || ends_with(name, "ffn.fc2.weight"))
                          return w / depth_div;
                        if (ends_with(name, ".ada_lin.1.weight") || name == "shared_ada_lin.1.weight") {
                          // rows [0, 2C): gamma1, gamma2 (x init_adaln_gamma); the scales and shifts x init_adaln.
                          w.narrow(0, 0, 2 * C).mul_(init_adaln_gamma);
                          w.narrow(0, 2 * C, w.size(0) - 2 * C).mul_(0.5);
                          return w;
                        }
                        if (ends_with(name, "ada_gss")) {
                          w.narrow(2, 0, 2).mul_(init_adaln_gamma);
                          w.narrow(2, 2, 4).mul_(0.5);
                          return w;
                        }
                        return w;  // Linear and Embedding weights, pos_start, pos_1LC
                      });
  for (const auto& p : params.items())
    if (no_weight_decay(p.name)) params.set_weight_decay(p.name, false);
  return params;
}

std::vector<at::Tensor> split_scales(const var::VarConfig& c, const at::Tensor& tokens) {
  if (tokens.dim() != 2 || tokens.size(1) != c.total_tokens())
    throw InvalidArgumentError("VAR tokens must be [B, " + std::to_string(c.total_tokens()) + "], got " +
                               c10::str(tokens.sizes()));
  std::vector<at::Tensor> out;
  for (int64_t si = 0; si < c.scales(); ++si) out.push_back(tokens.narrow(1, c.scale_begin(si), c.scale_tokens(si)));
  return out;
}

at::Tensor var_loss(const var::VarTransformer& model, const var::MultiScaleVqvae& vqvae, const at::Tensor& labels,
                    const at::Tensor& tokens, double* token_accuracy) {
  const var::VarConfig& c = model.config();
  at::Tensor targets = tokens.to(model.device(), at::kLong);
  at::Tensor x;
  {
    c10::NoGradGuard no_grad;  // the tokenizer is frozen
    x = vqvae.ids_to_var_input(split_scales(c, targets));
  }
  at::Tensor logits = model.forward_teacher(labels.to(model.device()), x).reshape({-1, c.vocab_size});
  targets = targets.reshape({-1});
  if (token_accuracy) *token_accuracy = logits.detach().argmax(1).eq(targets).to(at::kDouble).mean().item<double>();
  return at::cross_entropy_loss(logits, targets);
}

TrainSummary train_var(const TrainOptions& options, const VarTrainSetup& setup) {
  const var::VarConfig& cfg = setup.model;
  cfg.validate();
  nlohmann::json vae_manifest;
  const auto vae_weights = load_checkpoint_weights(setup.vae_run_dir, &vae_manifest);
  const VarVaeModelConfig vae_cfg = var_vae_model_config_from_json(vae_manifest.at("config").at("model"));
  var::check_compatible(cfg, vae_cfg.arch);
  if (world_class_count() != cfg.num_classes)
    throw InvalidArgumentError("VAR num_classes " + std::to_string(cfg.num_classes) + " differs from the world's " +
                               std::to_string(world_class_count()) + " classes");
  if (setup.cond_drop_rate < 0 || setup.cond_drop_rate >= 1)
    throw InvalidArgumentError("VAR cond_drop_rate must be in [0, 1)");
  const int image_size = vae_manifest.at("config").at("image_size").get<int>();

  // The frozen tokenizer: its encoder extracts the ids once, its quantiser builds
  // the teacher-forcing inputs every step.
  const VarVaeModel vae(vae_cfg, vae_weights, options.device);
  TokenSet train, held_out;
  {
    const std::string tokenizer_id = std::filesystem::absolute(setup.vae_run_dir).string() + "/" +
                                     vae_manifest.value("weights", std::string());
    const ImageTokenizer tokenizer{[&vae](const at::Tensor& input) { return at::cat(vae.encode_ids(input), 1); },
                                   vae.device()};
    const std::string dir = run_dir(options, "var");
    WorldImageSet images = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, image_size,
                                            options.render_threads);
    train = tokenize_images_cached(tokenizer, images,
                                   dir + "/tokens-train-" + std::to_string(setup.train_per_class) + ".safetensors",
                                   tokenizer_id);
    WorldImageSet eval_images = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                                 image_size, options.render_threads);
    held_out = tokenize_images_cached(tokenizer, eval_images,
                                      dir + "/tokens-heldout-" + std::to_string(setup.eval_per_class) + ".safetensors",
                                      tokenizer_id);
  }

  ParameterSet params = init_var_parameters(cfg, options.seed, options.device, setup.init_adaln_gamma);
  module_logger("train").info("var: " + std::to_string(params.numel()) + " parameters, " +
                              std::to_string(train.size()) + " training sequences of " +
                              std::to_string(cfg.total_tokens()) + " tokens");

  TrainingTask task;
  task.kind = "var";
  task.params = &params;
  task.config = {{"model", var::to_json(cfg)},
                 {"tokenizer", vae_manifest.value("weights", std::string())},
                 {"cond_drop_rate", setup.cond_drop_rate},
                 {"init_adaln_gamma", setup.init_adaln_gamma},
                 {"train_per_class", setup.train_per_class}};
  task.metric_names = {"token_accuracy"};
  task.step = [&](int64_t, at::Generator& gen) {
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    at::Tensor idx = at::randint(train.size(), {options.batch}, gen, i64);
    at::Tensor labels = train.labels.index_select(0, idx);
    at::Tensor drop = at::rand({options.batch}, gen).lt(setup.cond_drop_rate);
    labels = at::where(drop, at::full_like(labels, cfg.null_class()), labels);
    // Rebuilt per step: the transformer derives tensors from its weights at construction.
    const var::VarTransformer model(cfg, params.as_map(), options.device);
    double acc = 0;
    at::Tensor loss = var_loss(model, vae.vqvae(), labels, train.codes.index_select(0, idx), &acc);
    return StepResult{loss, {acc}};
  };
  task.eval_names = {"loss"};
  task.evaluate = [&]() {
    c10::NoGradGuard no_grad;
    const var::VarTransformer model(cfg, params.as_map(), options.device);
    double sum = 0;
    const int64_t n = held_out.size(), b = std::max<int64_t>(1, options.batch);
    for (int64_t i = 0; i < n; i += b) {
      const int64_t len = std::min(b, n - i);
      sum += var_loss(model, vae.vqvae(), held_out.labels.narrow(0, i, len), held_out.codes.narrow(0, i, len))
                 .item<double>() *
             static_cast<double>(len);
    }
    return std::vector<double>{n ? sum / static_cast<double>(n) : 0.0};
  };
  return run_training(options, task);
}

}  // namespace kvs::training
