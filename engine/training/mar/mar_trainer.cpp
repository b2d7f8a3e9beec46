#include "engine/training/mar/mar_trainer.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/mar_transformer.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/training/checkpoint.h"
#include "engine/training/mar/kl_vae_model.h"
#include "engine/training/mar/mar_latents.h"
#include "engine/training/world_data.h"

namespace kvs::training {
namespace {

constexpr const char* kHeadPrefix = "diffloss.net.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// torch.nn.init.xavier_uniform_ of a Linear weight [out, in].
at::Tensor xavier_uniform(const std::vector<int64_t>& shape, at::Generator& gen) {
  const double bound = std::sqrt(6.0 / static_cast<double>(shape[0] + shape[1]));
  return at::empty(shape, at::TensorOptions().dtype(at::kFloat)).uniform_(-bound, bound, gen);
}

// The moments of images `idx`, each taken from the mirrored set where `flip` is set.
at::Tensor pick_moments(const LatentSet& set, const at::Tensor& idx, const at::Tensor& flip) {
  at::Tensor m = set.moments.index_select(0, idx);
  if (!flip.defined() || !set.moments_flip.defined()) return m;
  return at::where(flip.view({-1, 1, 1, 1}), set.moments_flip.index_select(0, idx), m);
}

}  // namespace

void fit_mar_to_vae(MarTrainSetup& setup) {
  const auto manifest = read_checkpoint_manifest(setup.vae_run_dir);
  if (!manifest)
    throw FileError("folder " + setup.vae_run_dir + ": no trained KL VAE here (run `kvstudio-train kl-vae` first)");
  const KlVaeModelConfig vae = kl_vae_model_config_from_json(manifest->at("config").at("model"));
  setup.model.vae_embed_dim = vae.arch.embed_dim;
  setup.model.img_size = manifest->at("config").at("image_size").get<int64_t>();
  setup.model.vae_stride = vae.arch.upsampling();
}

ParameterSet init_mar_parameters(const mar::MarConfig& c, uint64_t seed, at::Device device, bool with_ema) {
  c.validate();
  ParameterSet params = init_parameters(
      mar::mar_expected_tensors(c), seed, device,
      [](const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen) {
        if (ends_with(name, ".bias")) return at::zeros(shape);
        if (shape.size() == 1) return at::ones(shape);  // LayerNorm weights
        if (name == "class_emb.weight" || name == "fake_latent" || name == "mask_token" ||
            ends_with(name, "pos_embed_learned"))
          return at::normal(0.0, 0.02, shape, gen);
        if (name == "diffloss.net.time_embed.mlp.0.weight" || name == "diffloss.net.time_embed.mlp.2.weight")
          return at::normal(0.0, 0.02, shape, gen);
        if (ends_with(name, "adaLN_modulation.1.weight") || name == "diffloss.net.final_layer.linear.weight")
          return at::zeros(shape);
        return xavier_uniform(shape, gen);  // every other Linear
      });
  if (with_ema) {
    // The EMA starts at the initial weights (engine_mar.py: ema_params = deepcopy of the model's).
    const std::vector<NamedParameter> model = params.items();
    for (const auto& p : model) params.add(kEmaPrefix + p.name, p.tensor.detach().clone());
  }
  return params;
}

std::map<std::string, at::Tensor> mar_weights(const ParameterSet& params, bool ema) {
  std::map<std::string, at::Tensor> out;
  const std::string prefix = kEmaPrefix;
  for (const auto& p : params.items()) {
    const bool is_ema = starts_with(p.name, prefix);
    if (is_ema == ema) out[is_ema ? p.name.substr(prefix.size()) : p.name] = p.tensor;
  }
  if (ema && out.empty()) throw InvalidArgumentError("this MAR run keeps no EMA weights (trained with --ema 0)");
  return out;
}

std::map<std::string, at::Tensor> diffusion_head_weights(const std::map<std::string, at::Tensor>& weights) {
  std::map<std::string, at::Tensor> out;
  const std::string prefix = kHeadPrefix;
  for (const auto& [name, t] : weights)
    if (starts_with(name, prefix)) out[name.substr(prefix.size())] = t;
  return out;
}

at::Tensor mar_patchify(const at::Tensor& x, int64_t p) {
  if (x.dim() != 4 || x.size(2) % p != 0 || x.size(3) % p != 0)
    throw InvalidArgumentError("MAR patchify: latents must be [B, C, H, W] with H, W multiples of " +
                               std::to_string(p) + ", got " + c10::str(x.sizes()));
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2) / p, w = x.size(3) / p;
  // reshape(n, c, h, p, w, p); einsum nchpwq -> nhwcpq; reshape(n, h*w, c*p*p)
  return x.reshape({b, c, h, p, w, p}).permute({0, 2, 4, 1, 3, 5}).reshape({b, h * w, c * p * p});
}

double mask_ratio_from_uniform(double u, double mask_ratio_min) {
  // X = 1 + 0.25 Z, Z standard normal truncated to [a, 0], a = (min - 1) / 0.25:
  // Z = Phi^-1(Phi(a) + u (Phi(0) - Phi(a))).
  const double a = (mask_ratio_min - 1.0) / 0.25;
  const double phi_a = 0.5 * std::erfc(-a / std::sqrt(2.0));
  const double p = phi_a + u * (0.5 - phi_a);
  const double z = std::sqrt(2.0) * at::erfinv(at::scalar_tensor(2.0 * p - 1.0, at::kDouble)).item<double>();
  return std::clamp(1.0 + 0.25 * z, mask_ratio_min, 1.0);
}

at::Tensor mask_from_orders(const at::Tensor& orders, int64_t num_masked) {
  if (orders.dim() != 2 || num_masked < 0 || num_masked > orders.size(1))
    throw InvalidArgumentError("MAR masking: orders must be [B, L] and 0 <= masked <= L");
  at::Tensor mask = at::zeros(orders.sizes(), at::TensorOptions().dtype(at::kFloat).device(orders.device()));
  return mask.scatter(1, orders.narrow(1, 0, num_masked), 1.0);
}

at::Tensor mar_condition(const mar::MarTransformer& transformer, const MarBatch& batch) {
  const int64_t B = batch.tokens.size(0);
  at::Tensor class_embedding = transformer.class_embedding(batch.labels);
  if (batch.drop_label.defined()) {
    // drop_latent_mask * fake_latent + (1 - drop_latent_mask) * class_embedding
    const at::Tensor drop = batch.drop_label.to(transformer.device(), at::kFloat).view({B, 1});
    class_embedding = drop * transformer.fake_latent(B) + (1.0 - drop) * class_embedding;
  }
  const at::Tensor encoded = transformer.forward_encoder(batch.tokens, batch.mask, class_embedding);
  return transformer.forward_decoder(encoded, batch.mask);
}

MarLoss mar_loss(const mar::MarTransformer& transformer, const mar::DiffusionHead& head,
                 const DiffusionTrainingLoss& diffusion, const MarBatch& batch, int64_t diffusion_batch_mul,
                 at::Generator& gen) {
  if (diffusion_batch_mul < 1) throw InvalidArgumentError("MAR: diffusion_batch_mul must be at least 1");
  const at::Device device = transformer.device();
  const at::Tensor z = mar_condition(transformer, batch);
  const int64_t B = batch.tokens.size(0), L = batch.tokens.size(1), C = batch.tokens.size(2), D = z.size(2);
  const int64_t rows = B * L * diffusion_batch_mul;
  const at::Tensor target = batch.tokens.to(device, at::kFloat).reshape({B * L, C}).repeat({diffusion_batch_mul, 1});
  const at::Tensor cond = z.reshape({B * L, D}).repeat({diffusion_batch_mul, 1});
  const at::Tensor mask = batch.mask.to(device).reshape({B * L}).repeat({diffusion_batch_mul});
  const at::Tensor t = at::randint(diffusion.num_timesteps(), {rows}, gen, at::TensorOptions().dtype(at::kLong));
  const at::Tensor noise = at::normal(0.0, 1.0, {rows, C}, gen, at::TensorOptions().dtype(at::kFloat));
  // (loss * mask).sum() / mask.sum() over all rows == the mean over the masked rows.
  const at::Tensor picked = mask.gt(0.5).nonzero().reshape({-1});
  if (picked.numel() == 0) throw InvalidArgumentError("MAR: the batch has no masked tokens to learn from");
  const at::Tensor picked_cpu = picked.to(at::kCPU);
  const at::Tensor cond_rows = cond.index_select(0, picked);
  const DiffusionTrainingLoss::Terms terms = diffusion.training_losses(
      [&](const at::Tensor& x_t, const at::Tensor& steps) { return head.forward(x_t, steps, cond_rows); },
      target.index_select(0, picked), t.index_select(0, picked_cpu).to(device),
      noise.index_select(0, picked_cpu).to(device));
  MarLoss out;
  out.loss = terms.loss.mean();
  out.mse = terms.mse.detach().mean().item<double>();
  out.vb = terms.vb.detach().mean().item<double>();
  return out;
}

TrainSummary train_mar(const TrainOptions& options, const MarTrainSetup& setup) {
  const mar::MarConfig& cfg = setup.model;
  cfg.validate();
  if (setup.mask_ratio_min <= 0 || setup.mask_ratio_min > 1)
    throw InvalidArgumentError("MAR: --mask-ratio-min must be in (0, 1]");
  if (setup.label_drop_prob < 0 || setup.label_drop_prob >= 1)
    throw InvalidArgumentError("MAR: --label-drop must be in [0, 1)");
  if (setup.diffusion_batch_mul < 1) throw InvalidArgumentError("MAR: --diffusion-batch-mul must be at least 1");
  if (setup.ema_rate < 0 || setup.ema_rate >= 1) throw InvalidArgumentError("MAR: --ema must be in [0, 1)");
  if (!read_checkpoint_manifest(setup.vae_run_dir))
    throw FileError("folder " + setup.vae_run_dir + ": no trained KL VAE here (run `kvstudio-train kl-vae` first)");
  nlohmann::json vae_manifest;
  const auto vae_weights = load_checkpoint_weights(setup.vae_run_dir, &vae_manifest);
  const KlVaeModelConfig vae_cfg = kl_vae_model_config_from_json(vae_manifest.at("config").at("model"));
  mar::check_compatible(cfg, vae_cfg.arch);
  const int image_size = vae_manifest.at("config").at("image_size").get<int>();
  const int64_t latent = image_size / vae_cfg.arch.upsampling();
  if (latent != cfg.seq_h() * cfg.patch_size)
    throw ModelMismatchError("MAR: the VAE makes " + std::to_string(latent) + "x" + std::to_string(latent) +
                             " latents of " + std::to_string(image_size) + " px images, but the MAR config expects " +
                             std::to_string(cfg.seq_h() * cfg.patch_size) + "x" +
                             std::to_string(cfg.seq_h() * cfg.patch_size) + " (img_size " +
                             std::to_string(cfg.img_size) + ", vae_stride " + std::to_string(cfg.vae_stride) + ")");
  if (world_class_count() != cfg.class_num)
    throw InvalidArgumentError("MAR class_num " + std::to_string(cfg.class_num) + " differs from the world's " +
                               std::to_string(world_class_count()) + " classes");

  // The frozen VAE encodes every image once (and its mirror), as main_cache.py.
  LatentSet train, held_out;
  {
    const KlVaeModel vae(vae_cfg, vae_weights, options.device);
    const std::string vae_id = std::filesystem::absolute(setup.vae_run_dir).string() + "/" +
                               vae_manifest.value("weights", std::string());
    const std::string dir = run_dir(options, "mar");
    WorldImageSet images = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, image_size,
                                            options.render_threads);
    train = encode_latents_cached(vae, images, setup.flip,
                                  dir + "/latents-train-" + std::to_string(setup.train_per_class) + ".safetensors",
                                  vae_id);
    WorldImageSet eval_images = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                                 image_size, options.render_threads);
    held_out = encode_latents_cached(vae, eval_images, false,
                                     dir + "/latents-heldout-" + std::to_string(setup.eval_per_class) + ".safetensors",
                                     vae_id);
  }
  const double latent_scale = measured_latent_scale(train.moments);

  const bool with_ema = setup.ema_rate > 0;
  ParameterSet params = init_mar_parameters(cfg, options.seed, options.device, with_ema);
  const auto model_weights = mar_weights(params, false);
  const mar::MarTransformer transformer(cfg, model_weights, options.device);
  const mar::DiffusionHead head(cfg, diffusion_head_weights(model_weights), options.device);
  const DiffusionTrainingLoss diffusion;
  int64_t model_numel = 0;
  for (const auto& [name, t] : model_weights) model_numel += t.numel();
  module_logger("train").info(
      "mar: " + std::to_string(model_numel) + " parameters" + (with_ema ? " (+ EMA copy)" : "") + ", " +
      std::to_string(train.size()) + " training images, " + std::to_string(cfg.seq_len()) + " tokens of " +
      std::to_string(cfg.token_embed_dim()) + " channels, latent scale " + std::to_string(latent_scale));

  TrainingTask task;
  task.kind = "mar";
  task.params = &params;
  task.config = {{"model", mar::to_json(cfg)},
                 {"vae", vae_manifest.value("weights", std::string())},
                 {"latent_scale", latent_scale},
                 {"mask_ratio_min", setup.mask_ratio_min},
                 {"label_drop_prob", setup.label_drop_prob},
                 {"diffusion_batch_mul", setup.diffusion_batch_mul},
                 {"ema_rate", setup.ema_rate},
                 {"flip", setup.flip},
                 {"train_per_class", setup.train_per_class}};
  task.metric_names = {"mse", "vb", "mask_ratio"};
  const int64_t L = cfg.seq_len();
  auto draw_batch = [&](const LatentSet& set, const at::Tensor& idx, bool flip_allowed, double mask_ratio,
                        at::Generator& gen) {
    const int64_t B = idx.size(0);
    at::Tensor flip;
    if (flip_allowed) flip = at::rand({B}, gen).lt(0.5);
    const KlPosterior posterior = posterior_from_moments(pick_moments(set, idx, flip));
    MarBatch batch;
    batch.tokens = mar_patchify(posterior.sample(gen) * latent_scale, cfg.patch_size).to(options.device);
    batch.labels = set.labels.index_select(0, idx);
    const at::Tensor orders = at::argsort(at::rand({B, L}, gen), /*dim=*/int64_t{1},
                                          /*descending=*/false);  // a uniform random permutation per row
    const int64_t num_masked = static_cast<int64_t>(std::ceil(static_cast<double>(L) * mask_ratio));
    batch.mask = mask_from_orders(orders, num_masked).to(options.device);
    return batch;
  };
  task.step = [&](int64_t, at::Generator& gen) {
    const at::Tensor idx = at::randint(train.size(), {options.batch}, gen, at::TensorOptions().dtype(at::kLong));
    const double ratio = mask_ratio_from_uniform(at::rand({1}, gen, at::kDouble).item<double>(), setup.mask_ratio_min);
    MarBatch batch = draw_batch(train, idx, setup.flip, ratio, gen);
    batch.drop_label = at::rand({options.batch}, gen).lt(setup.label_drop_prob);
    const MarLoss l = mar_loss(transformer, head, diffusion, batch, setup.diffusion_batch_mul, gen);
    return StepResult{l.loss, {l.mse, l.vb, ratio}};
  };
  if (with_ema) {
    // engine_mar.py update_ema after every optimizer step: ema = rate * ema + (1 - rate) * param.
    std::vector<std::pair<at::Tensor, at::Tensor>> pairs;
    for (const auto& p : params.items())
      if (!starts_with(p.name, kEmaPrefix)) pairs.emplace_back(params.get(kEmaPrefix + p.name), p.tensor);
    task.after_update = [pairs, rate = setup.ema_rate](int64_t) {
      c10::NoGradGuard no_grad;
      for (const auto& [ema, param] : pairs) ema.mul_(rate).add_(param, 1.0 - rate);
    };
  }
  // Held-out loss of the weights the export ships (EMA when kept), on fixed draws:
  // mask ratio 0.85 (about the training mean), no class dropout.
  const auto shipped_weights = mar_weights(params, with_ema);
  const mar::MarTransformer shipped_transformer(cfg, shipped_weights, options.device);
  const mar::DiffusionHead shipped_head(cfg, diffusion_head_weights(shipped_weights), options.device);
  task.eval_names = {"loss"};
  task.evaluate = [&]() {
    c10::NoGradGuard no_grad;
    at::Generator gen = step_generator(options.seed, 0, /*stream=*/7);
    double sum = 0;
    const int64_t n = held_out.size(), b = std::max<int64_t>(1, options.batch);
    for (int64_t i = 0; i < n; i += b) {
      const int64_t len = std::min(b, n - i);
      const at::Tensor idx = at::arange(i, i + len, at::TensorOptions().dtype(at::kLong));
      const MarBatch batch = draw_batch(held_out, idx, false, 0.85, gen);
      sum += mar_loss(shipped_transformer, shipped_head, diffusion, batch, 1, gen).loss.item<double>() *
             static_cast<double>(len);
    }
    return std::vector<double>{n ? sum / static_cast<double>(n) : 0.0};
  };
  return run_training(options, task);
}

}  // namespace kvs::training
