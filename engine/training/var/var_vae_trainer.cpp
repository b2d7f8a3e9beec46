#include "engine/training/var/var_vae_trainer.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/metrics/image_metrics.h"
#include "engine/metrics/image_tensors.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/training/checkpoint.h"
#include "engine/training/world_data.h"

namespace kvs::training {

double var_reconstruction_psnr(const VarVaeModel& encoder, const var::MultiScaleVqvae& decoder,
                               const at::Tensor& pixels_nhwc, int64_t batch_size) {
  c10::NoGradGuard no_grad;
  const int64_t n = pixels_nhwc.size(0);
  if (n == 0) return 0.0;
  double sum = 0;
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t len = std::min(batch_size, n - i);
    at::Tensor real = pixels_nhwc.narrow(0, i, len);
    const std::vector<at::Tensor> ids = encoder.encode_ids(u8_images_to_input(real, encoder.device()));
    at::Tensor rec = var::var_images_to_uint8_nhwc(decoder.fhat_to_img(decoder.ids_to_fhat(ids)));
    for (int64_t j = 0; j < len; ++j) sum += psnr(tensor_to_rgb_image(real[j]), tensor_to_rgb_image(rec[j]));
  }
  return sum / static_cast<double>(n);
}

double var_bundle_tokenizer_psnr(const std::string& work_dir, const var::MultiScaleVqvae& decoder,
                                 const at::Tensor& pixels_nhwc, at::Device device) {
  nlohmann::json manifest;
  const auto weights = load_checkpoint_weights((std::filesystem::path(work_dir) / "var-vae").string(), &manifest);
  const VarVaeModel encoder(var_vae_model_config_from_json(manifest.at("config").at("model")), weights, device);
  return var_reconstruction_psnr(encoder, decoder, pixels_nhwc);
}

namespace {

// VectorQuantizer2's ema_vocab_hit_SV update for one step's ids (record_hit = step).
void update_vocab_hits(at::Tensor& hits, const std::vector<at::Tensor>& ids, int64_t vocab, int64_t step) {
  c10::NoGradGuard no_grad;
  for (size_t si = 0; si < ids.size(); ++si) {
    at::Tensor hit = at::bincount(ids[si].reshape({-1}), {}, vocab).to(hits.device(), at::kFloat);
    at::Tensor row = hits[static_cast<int64_t>(si)];
    if (step == 0) row.copy_(hit);
    else if (step < 100) row.mul_(0.9).add_(hit * 0.1);
    else row.mul_(0.99).add_(hit * 0.01);
  }
}

}  // namespace

TrainSummary train_var_vae(const TrainOptions& options, const VarVaeTrainSetup& setup) {
  const VarVaeModelConfig& cfg = setup.model;
  cfg.validate();
  if (setup.image_size != cfg.arch.image_size())
    throw InvalidArgumentError("VAR VAE: image size " + std::to_string(setup.image_size) + " px does not fit the " +
                               std::to_string(cfg.arch.v_patch_nums.back()) + "x" +
                               std::to_string(cfg.arch.v_patch_nums.back()) + " final scale at " +
                               std::to_string(cfg.arch.downsample()) + "x downsampling");
  WorldImageSet train = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, setup.image_size,
                                         options.render_threads);
  WorldImageSet held_out = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                            setup.image_size, options.render_threads);

  ParameterSet params = init_var_vae_parameters(cfg, options.seed, options.device);
  VarVaeModel model(cfg, params.as_map(), options.device);
  module_logger("train").info("var-vae: " + std::to_string(params.numel()) + " parameters, " +
                              std::to_string(train.size()) + " training images");

  const int64_t vocab = cfg.arch.vocab_size;
  int64_t tokens_per_image = 0;
  for (int64_t pn : cfg.arch.v_patch_nums) tokens_per_image += pn * pn;
  // Upstream's usage margin: 0.08 x the hits per code of an evenly used codebook.
  const double margin = 0.08 * static_cast<double>(options.batch * tokens_per_image) / static_cast<double>(vocab);
  const int64_t restart_until = static_cast<int64_t>(setup.restart_until_fraction * static_cast<double>(options.steps));

  TrainingTask task;
  task.kind = "var-vae";
  task.params = &params;
  task.config = {{"model", to_json(cfg)},
                 {"image_size", setup.image_size},
                 {"train_per_class", setup.train_per_class},
                 {"flip", setup.flip},
                 {"restart_every", setup.restart_every},
                 {"restart_until_fraction", setup.restart_until_fraction}};
  task.metric_names = {"rec_mse", "vq_loss", "codebook_usage", "codes_restarted", "train_psnr"};
  task.step = [&](int64_t step, at::Generator& gen) {
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    at::Tensor idx = at::randint(train.size(), {options.batch}, gen, i64);
    at::Tensor flip;
    if (setup.flip) flip = at::randint(2, {options.batch}, gen, i64);
    at::Tensor x = train.batch(idx, options.device, flip);
    const bool restart_now = setup.restart_every > 0 && step > 0 && step < restart_until &&
                             step % setup.restart_every == 0;
    VarVaeOutput out = model.forward(x, true, restart_now);
    at::Tensor rec = at::mse_loss(out.reconstruction, x);
    at::Tensor loss = rec + out.quantized.vq_loss;

    at::Tensor hits = params.get(kVocabHitBuffer);
    update_vocab_hits(hits, out.quantized.ids, vocab, step);
    at::Tensor alive = hits.sum(0).ge(margin);
    double restarted = 0;
    if (restart_now) {
      c10::NoGradGuard no_grad;
      at::Tensor dead = alive.logical_not().nonzero().reshape({-1});
      const int64_t n_dead = dead.numel();
      if (n_dead > 0) {
        const at::Tensor& pool = out.quantized.lookup_inputs;
        at::Tensor pick = at::randint(pool.size(0), {n_dead}, gen, i64).to(pool.device());
        params.get("quantize.embedding.weight").index_copy_(0, dead.to(pool.device()), pool.index_select(0, pick));
        // A fresh code starts at the margin (spread over the scales) so that it has
        // until the next restart to be used.
        hits.index_fill_(1, dead.to(hits.device()), margin / static_cast<double>(hits.size(0)));
        restarted = static_cast<double>(n_dead);
      }
    }
    const double mse = rec.item<double>();
    return StepResult{loss,
                      {mse, out.quantized.vq_loss.item<double>(), alive.to(at::kDouble).mean().item<double>(),
                       restarted, 10.0 * std::log10(4.0 / std::max(mse, 1e-12))}};
  };
  task.eval_names = {"psnr_db"};
  task.evaluate = [&]() {
    return std::vector<double>{var_reconstruction_psnr(model, model.vqvae(), held_out.pixels())};
  };
  return run_training(options, task);
}

}  // namespace kvs::training
