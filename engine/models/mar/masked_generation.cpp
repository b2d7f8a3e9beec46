#include "engine/models/mar/masked_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"

namespace kvs::mar {

void MaskedParams::validate() const {
  if (num_iter < 1)
    throw InvalidArgumentError("MAR needs at least 1 decoding step (got " + std::to_string(num_iter) + ")");
  if (cfg_schedule != "linear" && cfg_schedule != "constant")
    throw InvalidArgumentError("unknown cfg schedule '" + cfg_schedule + "' (expected linear or constant)");
  if (!(temperature > 0)) throw InvalidArgumentError("MAR temperature must be > 0");
  if (!std::isfinite(cfg)) throw InvalidArgumentError("cfg scale must be finite");
}

at::Tensor sample_head(const DiffusionHead& head, const GaussianDiffusion& diffusion, const at::Tensor& z,
                       double temperature, double cfg, MarRandom& rng, const GaussianDiffusion::ModelFn& model,
                       const std::function<bool()>& cancelled) {
  const int64_t rows = z.size(0), channels = head.in_channels();
  const bool guided = cfg != 1.0;
  at::Tensor noise;
  GaussianDiffusion::ModelFn fn = model;
  if (guided) {
    noise = rng.normal({rows / 2, channels}).to(z.device());
    noise = at::cat({noise, noise}, 0);
    if (!fn)
      fn = [&](const at::Tensor& x, int64_t, const at::Tensor& t) { return head.forward_with_cfg(x, t, z, cfg); };
  } else {
    noise = rng.normal({rows, channels}).to(z.device());
    if (!fn) fn = [&](const at::Tensor& x, int64_t, const at::Tensor& t) { return head.forward(x, t, z); };
  }
  return diffusion.p_sample_loop(fn, noise, rng, temperature, cancelled);
}

namespace {

// MAR's transformer and diffusion head as the masked loop drives them.
class ClassConditionedMar final : public masked::MaskedNetwork {
 public:
  ClassConditionedMar(const MarModel& model, const at::Tensor& labels, const MaskedParams& params, MarRandom& rng,
                      const MaskedHooks& hooks)
      : model_(model), params_(params), rng_(rng), hooks_(hooks), guided_(params.cfg != 1.0) {
    const MarTransformer& transformer = *model.transformer;
    const int64_t batch = labels.size(0), seq_len = transformer.config().seq_len();
    class_embedding_ = transformer.class_embedding(labels);
    if (guided_) class_embedding_ = at::cat({class_embedding_, transformer.fake_latent(batch)}, 0);
    predicted_before_ = at::zeros({guided_ ? 2 * batch : batch, seq_len},
                                  at::TensorOptions().dtype(at::kBool).device(transformer.device()));
  }

  at::Tensor orders(int64_t images, int64_t seq_len) override { return rng_.orders(images, seq_len); }

  at::Tensor predict(const masked::MaskedStepPlan& plan) override {
    if (hooks_.flops) hooks_.flops->begin_step();
    const MarTransformer& transformer = *model_.transformer;
    const MarConfig& config = transformer.config();
    const int64_t rows = class_embedding_.size(0), seq_len = config.seq_len();
    const at::Tensor& tokens = *plan.tokens;
    const at::Tensor& to_predict = *plan.to_predict;
    MarStepInput input;
    input.step = plan.step;
    input.num_iter = plan.num_iter;
    input.cfg = guided_;
    input.tokens = guided_ ? at::cat({tokens, tokens}, 0) : tokens;
    const at::Tensor mask_f = plan.unknown->to(at::kFloat);
    input.mask = guided_ ? at::cat({mask_f, mask_f}, 0) : mask_f;
    input.class_embedding = class_embedding_;
    input.to_predict = guided_ ? at::cat({to_predict, to_predict}, 0) : to_predict;
    input.predicted_before = predicted_before_;

    at::Tensor z;
    if (hooks_.feature_cache) {
      z = hooks_.feature_cache->condition(transformer, input);
    } else {
      at::Tensor encoded = transformer.forward_encoder(input.tokens, input.mask, input.class_embedding,
                                                       hooks_.observer);
      z = transformer.forward_decoder(encoded, input.mask, hooks_.observer);
      if (hooks_.flops) hooks_.flops->add(MarFlops::full_transformer(config, rows, seq_len - plan.unknown_count));
    }
    const int64_t width = z.size(2);
    at::Tensor z_rows = at::masked_select(z, input.to_predict.unsqueeze(-1)).reshape({-1, width});
    GaussianDiffusion::ModelFn head_fn;
    if (hooks_.feature_cache)
      head_fn = hooks_.feature_cache->head_model(*model_.head, *model_.diffusion, input, z_rows, plan.cfg);
    // The exact head runs on every row of z_rows (forward_with_cfg doubles the conditional half) per reverse step.
    if (hooks_.flops && !head_fn)
      hooks_.flops->add(static_cast<double>(model_.diffusion->num_timesteps()) *
                        MarFlops::head_forward(config, z_rows.size(0)));
    at::Tensor sampled = sample_head(*model_.head, *model_.diffusion, z_rows, params_.temperature, plan.cfg, rng_,
                                     head_fn, hooks_.cancelled);
    if (guided_) sampled = sampled.narrow(0, 0, sampled.size(0) / 2);  // drop the null-class samples
    predicted_before_ = input.to_predict;
    return sampled;
  }

 private:
  const MarModel& model_;
  const MaskedParams params_;
  MarRandom& rng_;
  const MaskedHooks& hooks_;
  const bool guided_;
  at::Tensor class_embedding_;
  at::Tensor predicted_before_;
};

}  // namespace

std::unique_ptr<masked::MaskedNetwork> class_conditioned_mar(const MarModel& model, const at::Tensor& labels,
                                                             const MaskedParams& params, MarRandom& rng,
                                                             const MaskedHooks& hooks) {
  params.validate();
  return std::make_unique<ClassConditionedMar>(model, labels.to(at::kCPU, at::kLong).reshape({-1}), params, rng, hooks);
}

masked::MaskedShape masked_shape(const MarModel& model, int64_t images, const MaskedParams& params) {
  const MarConfig& config = model.transformer->config();
  masked::MaskedShape shape;
  shape.images = images;
  shape.seq_len = config.seq_len();
  shape.channels = config.token_embed_dim();
  shape.num_iter = params.num_iter;
  shape.cfg = params.cfg;
  shape.cfg_schedule = params.cfg_schedule;
  shape.device = model.transformer->device();
  return shape;
}

MaskedResult generate_masked(const MarModel& model, const at::Tensor& labels, const MaskedParams& params,
                             MarRandom& rng, const MaskedHooks& hooks) {
  const auto network = class_conditioned_mar(model, labels, params, rng, hooks);
  masked::MaskedLoopHooks loop;
  loop.cancelled = hooks.cancelled;
  loop.on_step = hooks.on_step;
  return masked::generate(*network, masked_shape(model, labels.numel(), params), loop);
}

}  // namespace kvs::mar
