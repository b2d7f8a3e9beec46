#include "engine/training/llamagen/vq_trainer.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <optional>

#include "engine/core/logging.h"
#include "engine/metrics/image_metrics.h"
#include "engine/metrics/image_tensors.h"
#include "engine/models/blocks/vq_decoder.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/training/bundle_start.h"
#include "engine/training/world_data.h"

namespace kvs::training {

double reconstruction_psnr(const VqModel& model, const at::Tensor& pixels_nhwc, int64_t batch_size) {
  c10::NoGradGuard no_grad;
  const int64_t n = pixels_nhwc.size(0);
  if (n == 0) return 0.0;
  at::Device device = model.device();
  double sum = 0;
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t len = std::min(batch_size, n - i);
    at::Tensor real = pixels_nhwc.narrow(0, i, len);
    at::Tensor rec = llamagen::images_to_uint8_nhwc(
        model.forward(u8_images_to_input(real, device), false).reconstruction);
    for (int64_t j = 0; j < len; ++j) sum += psnr(tensor_to_rgb_image(real[j]), tensor_to_rgb_image(rec[j]));
  }
  return sum / static_cast<double>(n);
}

TrainSummary train_vq(const TrainOptions& options, const VqTrainSetup& setup_in) {
  VqTrainSetup setup = setup_in;
  std::optional<BundleVq> start;
  if (!setup.decoder_from.empty()) {
    start = read_bundle_vq(setup.decoder_from);
    setup.model.arch = start->config.arch;
    setup.model.encoder_ch_mult.clear();
    setup.image_size = start->image_size;
  }
  const VqModelConfig& cfg = setup.model;
  cfg.validate();
  WorldImageSet train = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, setup.image_size,
                                         options.render_threads);
  WorldImageSet held_out = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                            setup.image_size, options.render_threads);

  ParameterSet params = init_vq_parameters(cfg, options.seed, options.device);
  if (start) {
    // The bundle's decoder half, frozen: AdamW and the gradient clipping skip
    // tensors without a gradient, and the checkpoint keeps them as they are.
    c10::NoGradGuard no_grad;
    for (const auto& [name, value] : start->decoder) {
      const at::Tensor& p = params.get(name);
      p.copy_(value);
      p.requires_grad_(false);
    }
    for (const auto& [name, value] : start->encoder) params.get(name).copy_(value);
    module_logger("train").info("vq: fitting the encoder to the frozen decoder of " + start->origin +
                                (start->encoder.empty() ? "" : ", starting from its shipped encoder"));
  }
  VqModel model(cfg, params.as_map(), options.device);
  module_logger("train").info("vq: " + std::to_string(params.numel()) + " parameters, " + std::to_string(train.size()) +
                              " training images");

  // Codebook usage as upstream logs it: distinct codes among the last 65536 assignments.
  const int64_t window = 65536;
  at::Tensor recent = at::zeros({window}, at::TensorOptions().dtype(at::kLong));

  TrainingTask task;
  task.kind = "vq";
  task.params = &params;
  task.config = {{"model", to_json(cfg)},
                 {"image_size", setup.image_size},
                 {"train_per_class", setup.train_per_class},
                 {"flip", setup.flip}};
  if (start) task.config["decoder_from"] = start->fingerprint;
  task.metric_names = {"rec_mse", "vq_loss", "commit_loss", "entropy_loss", "codebook_usage", "train_psnr"};
  task.step = [&](int64_t, at::Generator& gen) {
    at::Tensor idx = at::randint(train.size(), {options.batch}, gen, at::TensorOptions().dtype(at::kLong));
    at::Tensor flip;
    if (setup.flip) flip = at::randint(2, {options.batch}, gen, at::TensorOptions().dtype(at::kLong));
    at::Tensor x = train.batch(idx, options.device, flip);
    VqOutput out = model.forward(x, true);
    at::Tensor rec = at::mse_loss(out.reconstruction, x);
    at::Tensor loss = rec + out.quantized.vq_loss + out.quantized.commit_loss + out.quantized.entropy_loss;
    at::Tensor codes = out.quantized.codes.reshape({-1}).to(at::kCPU);
    const int64_t m = std::min(window, codes.numel());
    recent = at::cat({recent.narrow(0, m, window - m), codes.narrow(0, codes.numel() - m, m)});
    const double usage = static_cast<double>(std::get<0>(at::_unique(recent)).numel()) / cfg.arch.codebook_size;
    const double mse = rec.item<double>();
    return StepResult{loss,
                      {mse, out.quantized.vq_loss.item<double>(), out.quantized.commit_loss.item<double>(),
                       out.quantized.entropy_loss.item<double>(), usage,
                       10.0 * std::log10(4.0 / std::max(mse, 1e-12))}};
  };
  task.eval_names = {"psnr_db"};
  task.evaluate = [&]() { return std::vector<double>{reconstruction_psnr(model, held_out.pixels())}; };
  return run_training(options, task);
}

}  // namespace kvs::training
