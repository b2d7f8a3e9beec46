#include "engine/training/mar/kl_vae_trainer.h"

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
#include "engine/models/mar/kl_vae_decoder.h"
#include "engine/training/checkpoint.h"
#include "engine/training/world_data.h"

namespace kvs::training {

KlVaeLoss kl_vae_loss(const KlVaeModel& model, const at::Tensor& x, at::Generator& noise_gen) {
  const KlPosterior posterior = model.encode(x);
  KlVaeLoss out;
  out.reconstruction = model.decode(posterior.sample(noise_gen));
  out.rec_mse = at::mse_loss(out.reconstruction, x);
  out.kl_per_image = posterior.kl().mean();
  out.posterior_std = posterior.std().detach().mean().item<double>();
  const double pixels = static_cast<double>(x.size(1) * x.size(2) * x.size(3));
  out.loss = out.rec_mse + out.kl_per_image * (model.config().kl_weight / pixels);
  return out;
}

double kl_vae_reconstruction_psnr(const KlVaeModel& encoder, const mar::KlVaeDecoder& decoder,
                                  const at::Tensor& pixels_nhwc, int64_t batch_size) {
  c10::NoGradGuard no_grad;
  const int64_t n = pixels_nhwc.size(0);
  if (n == 0) return 0.0;
  const double scale = decoder.config().latent_scale;
  double sum = 0;
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t len = std::min(batch_size, n - i);
    at::Tensor real = pixels_nhwc.narrow(0, i, len);
    at::Tensor mean = encoder.encode(u8_images_to_input(real, encoder.device())).mean;
    at::Tensor rec = mar::mar_images_to_uint8_nhwc(decoder.decode_tokens(mean * scale));
    for (int64_t j = 0; j < len; ++j) sum += psnr(tensor_to_rgb_image(real[j]), tensor_to_rgb_image(rec[j]));
  }
  return sum / static_cast<double>(n);
}

double kl_vae_bundle_tokenizer_psnr(const std::string& work_dir, const mar::KlVaeDecoder& decoder,
                                    const at::Tensor& pixels_nhwc, at::Device device) {
  nlohmann::json manifest;
  const auto weights = load_checkpoint_weights((std::filesystem::path(work_dir) / "kl-vae").string(), &manifest);
  const KlVaeModel encoder(kl_vae_model_config_from_json(manifest.at("config").at("model")), weights, device);
  return kl_vae_reconstruction_psnr(encoder, decoder, pixels_nhwc);
}

TrainSummary train_kl_vae(const TrainOptions& options, const KlVaeTrainSetup& setup) {
  const KlVaeModelConfig& cfg = setup.model;
  cfg.validate();
  if (setup.image_size <= 0 || setup.image_size % cfg.arch.upsampling() != 0)
    throw InvalidArgumentError("KL VAE: image size " + std::to_string(setup.image_size) + " px is not a multiple of " +
                               "the " + std::to_string(cfg.arch.upsampling()) + "x downsampling");
  WorldImageSet train = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, setup.image_size,
                                         options.render_threads);
  WorldImageSet held_out = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                            setup.image_size, options.render_threads);

  ParameterSet params = init_kl_vae_parameters(cfg, options.seed, options.device);
  KlVaeModel model(cfg, params.as_map(), options.device);
  module_logger("train").info(
      "kl-vae: " + std::to_string(params.numel()) + " parameters, " + std::to_string(train.size()) +
      " training images, latent " + std::to_string(cfg.arch.embed_dim) + "x" +
      std::to_string(model.latent_size(setup.image_size)) + "x" + std::to_string(model.latent_size(setup.image_size)));

  TrainingTask task;
  task.kind = "kl-vae";
  task.params = &params;
  task.config = {{"model", to_json(cfg)},
                 {"image_size", setup.image_size},
                 {"train_per_class", setup.train_per_class},
                 {"flip", setup.flip}};
  task.metric_names = {"rec_mse", "kl", "posterior_std", "train_psnr"};
  task.step = [&](int64_t, at::Generator& gen) {
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    at::Tensor idx = at::randint(train.size(), {options.batch}, gen, i64);
    at::Tensor flip;
    if (setup.flip) flip = at::randint(2, {options.batch}, gen, i64);
    at::Tensor x = train.batch(idx, options.device, flip);
    const KlVaeLoss l = kl_vae_loss(model, x, gen);
    const double mse = l.rec_mse.item<double>();
    return StepResult{l.loss,
                      {mse, l.kl_per_image.item<double>(), l.posterior_std,
                       10.0 * std::log10(4.0 / std::max(mse, 1e-12))}};
  };
  task.eval_names = {"psnr_db"};
  task.evaluate = [&]() {
    return std::vector<double>{kl_vae_reconstruction_psnr(model, model.decoder(), held_out.pixels())};
  };
  return run_training(options, task);
}

}  // namespace kvs::training
