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
namespace {

constexpr double kPi = 3.141592653589793;

// mask_by_order: the first `mask_len` positions of each order are (still) unknown.
at::Tensor mask_by_order(int64_t mask_len, const at::Tensor& orders) {
  at::Tensor m = at::zeros(orders.sizes(), orders.options().dtype(at::kBool));
  if (mask_len > 0) m.scatter_(1, orders.narrow(1, 0, mask_len), true);
  return m;
}

}  // namespace

void MaskedParams::validate() const {
  if (num_iter < 1)
    throw InvalidArgumentError("MAR needs at least 1 decoding step (got " + std::to_string(num_iter) + ")");
  if (cfg_schedule != "linear" && cfg_schedule != "constant")
    throw InvalidArgumentError("unknown cfg schedule '" + cfg_schedule + "' (expected linear or constant)");
  if (!(temperature > 0)) throw InvalidArgumentError("MAR temperature must be > 0");
  if (!std::isfinite(cfg)) throw InvalidArgumentError("cfg scale must be finite");
}

int64_t mask_len_after_step(int64_t step, int64_t num_iter, int64_t seq_len, int64_t unknown_now) {
  // mask_ratio = np.cos(math.pi / 2. * (step + 1) / num_iter); np.floor(seq_len * mask_ratio)
  const double ratio = std::cos(kPi / 2.0 * static_cast<double>(step + 1) / static_cast<double>(num_iter));
  const double len = std::floor(static_cast<double>(seq_len) * ratio);
  // torch.Tensor([...]) is float32; then max(1, min(unknown - 1, mask_len)).
  const float len32 = static_cast<float>(len);
  const float clamped = std::max(1.0f, std::min(static_cast<float>(unknown_now - 1), len32));
  return static_cast<int64_t>(clamped);
}

float cfg_for_step(double cfg, const std::string& schedule, int64_t mask_len, int64_t seq_len) {
  if (schedule == "constant") return static_cast<float>(cfg);
  if (schedule != "linear") throw InvalidArgumentError("unknown cfg schedule '" + schedule + "'");
  // 1 + (cfg - 1) * (seq_len - mask_len) / seq_len on float32 tensors.
  const float known = static_cast<float>(seq_len) - static_cast<float>(mask_len);
  const float scaled = static_cast<float>(cfg - 1.0) * known;
  const float ratio = scaled / static_cast<float>(seq_len);
  return 1.0f + ratio;
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

MaskedResult generate_masked(const MarModel& model, const at::Tensor& labels_in, const MaskedParams& params,
                             MarRandom& rng, const MaskedHooks& hooks) {
  params.validate();
  const MarTransformer& transformer = *model.transformer;
  const MarConfig& config = transformer.config();
  const at::Device device = transformer.device();
  const at::Tensor labels = labels_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t batch = labels.size(0), seq_len = config.seq_len(), channels = config.token_embed_dim();
  const bool guided = params.cfg != 1.0;
  const int64_t rows = guided ? 2 * batch : batch;
  auto check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };

  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  at::Tensor tokens = at::zeros({batch, seq_len, channels}, f32);
  at::Tensor unknown = at::ones({batch, seq_len}, f32.dtype(at::kBool));
  const at::Tensor orders = rng.orders(batch, seq_len).to(device);
  at::Tensor class_embedding = transformer.class_embedding(labels);
  if (guided) class_embedding = at::cat({class_embedding, transformer.fake_latent(batch)}, 0);
  at::Tensor predicted_before = at::zeros({rows, seq_len}, f32.dtype(at::kBool));

  MaskedResult result;
  result.orders = orders;
  int64_t unknown_count = seq_len;
  for (int64_t step = 0; step < params.num_iter; ++step) {
    check_cancel();
    if (hooks.flops) hooks.flops->begin_step();
    // The step's plan (upstream computes it right after the forward; it only depends on the order).
    const int64_t mask_len = mask_len_after_step(step, params.num_iter, seq_len, unknown_count);
    const at::Tensor unknown_next = mask_by_order(mask_len, orders);
    const bool last = step >= params.num_iter - 1;
    const at::Tensor to_predict = last ? unknown.clone() : at::logical_xor(unknown, unknown_next);
    const float cfg_iter = cfg_for_step(params.cfg, params.cfg_schedule, mask_len, seq_len);

    MarStepInput input;
    input.step = step;
    input.num_iter = params.num_iter;
    input.cfg = guided;
    input.tokens = guided ? at::cat({tokens, tokens}, 0) : tokens;
    at::Tensor mask_f = unknown.to(at::kFloat);
    input.mask = guided ? at::cat({mask_f, mask_f}, 0) : mask_f;
    input.class_embedding = class_embedding;
    input.to_predict = guided ? at::cat({to_predict, to_predict}, 0) : to_predict;
    input.predicted_before = predicted_before;

    at::Tensor z;
    if (hooks.feature_cache) {
      z = hooks.feature_cache->condition(transformer, input);
    } else {
      at::Tensor encoded = transformer.forward_encoder(input.tokens, input.mask, input.class_embedding, hooks.observer);
      z = transformer.forward_decoder(encoded, input.mask, hooks.observer);
      if (hooks.flops) hooks.flops->add(MarFlops::full_transformer(config, rows, seq_len - unknown_count));
    }
    const int64_t width = z.size(2);
    at::Tensor z_rows = at::masked_select(z, input.to_predict.unsqueeze(-1)).reshape({-1, width});
    GaussianDiffusion::ModelFn head_fn;
    if (hooks.feature_cache)
      head_fn = hooks.feature_cache->head_model(*model.head, *model.diffusion, input, z_rows, cfg_iter);
    // The exact head runs on every row of z_rows (forward_with_cfg doubles the conditional half) per reverse step.
    if (hooks.flops && !head_fn)
      hooks.flops->add(static_cast<double>(model.diffusion->num_timesteps()) *
                       MarFlops::head_forward(config, z_rows.size(0)));
    at::Tensor sampled = sample_head(*model.head, *model.diffusion, z_rows, params.temperature, cfg_iter, rng, head_fn,
                                     hooks.cancelled);
    if (guided) sampled = sampled.narrow(0, 0, sampled.size(0) / 2);  // drop the null-class samples
    tokens = tokens.clone();
    tokens.masked_scatter_(to_predict.unsqueeze(-1).expand_as(tokens), sampled.contiguous());

    const int64_t predicted = batch > 0 ? to_predict[0].sum().item<int64_t>() : 0;
    unknown = last ? at::zeros_like(unknown) : unknown_next;
    unknown_count = last ? 0 : mask_len;
    predicted_before = input.to_predict;
    result.predicted_per_step.push_back(predicted);
    result.cfg_per_step.push_back(cfg_iter);
    if (hooks.on_step) {
      MaskedStep s;
      s.step = step;
      s.steps_total = params.num_iter;
      s.tokens_done = seq_len - unknown_count;
      s.predicted = predicted;
      s.cfg = cfg_iter;
      const at::Tensor known = at::logical_not(unknown);
      s.tokens = &tokens;
      s.predicted_mask = &to_predict;
      s.known = &known;
      s.orders = &orders;
      hooks.on_step(s);
    }
  }
  result.tokens = tokens;
  return result;
}

}  // namespace kvs::mar
