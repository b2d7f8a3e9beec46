#include "engine/generation/masked/masked_loop.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"

namespace kvs::masked {
namespace {

constexpr double kPi = 3.141592653589793;

}  // namespace

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

at::Tensor mask_by_order(int64_t mask_len, const at::Tensor& orders) {
  at::Tensor m = at::zeros(orders.sizes(), orders.options().dtype(at::kBool));
  if (mask_len > 0) m.scatter_(1, orders.narrow(1, 0, mask_len), true);
  return m;
}

MaskedResult generate(MaskedNetwork& network, const MaskedShape& shape, const MaskedLoopHooks& hooks) {
  if (shape.num_iter < 1)
    throw InvalidArgumentError("masked generation needs at least 1 step (got " + std::to_string(shape.num_iter) + ")");
  const int64_t batch = shape.images, seq_len = shape.seq_len;
  auto check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(shape.device);
  at::Tensor tokens = at::zeros({batch, seq_len, shape.channels}, f32);
  at::Tensor unknown = at::ones({batch, seq_len}, f32.dtype(at::kBool));
  const at::Tensor orders = network.orders(batch, seq_len).to(shape.device);

  MaskedResult result;
  result.orders = orders;
  int64_t unknown_count = seq_len;
  for (int64_t step = 0; step < shape.num_iter; ++step) {
    check_cancel();
    // The step's plan (upstream computes it right after the forward; it only depends on the order).
    const int64_t mask_len = mask_len_after_step(step, shape.num_iter, seq_len, unknown_count);
    const at::Tensor unknown_next = mask_by_order(mask_len, orders);
    const bool last = step >= shape.num_iter - 1;
    const at::Tensor to_predict = last ? unknown.clone() : at::logical_xor(unknown, unknown_next);
    MaskedStepPlan plan;
    plan.step = step;
    plan.num_iter = shape.num_iter;
    plan.tokens = &tokens;
    plan.unknown = &unknown;
    plan.to_predict = &to_predict;
    plan.unknown_count = unknown_count;
    plan.cfg = cfg_for_step(shape.cfg, shape.cfg_schedule, mask_len, seq_len);

    const at::Tensor sampled = network.predict(plan);
    tokens = tokens.clone();
    tokens.masked_scatter_(to_predict.unsqueeze(-1).expand_as(tokens), sampled.contiguous());

    const int64_t predicted = batch > 0 ? to_predict[0].sum().item<int64_t>() : 0;
    unknown = last ? at::zeros_like(unknown) : unknown_next;
    unknown_count = last ? 0 : mask_len;
    result.predicted_per_step.push_back(predicted);
    result.cfg_per_step.push_back(plan.cfg);
    if (hooks.on_step) {
      MaskedStep s;
      s.step = step;
      s.steps_total = shape.num_iter;
      s.tokens_done = seq_len - unknown_count;
      s.predicted = predicted;
      s.cfg = plan.cfg;
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

}  // namespace kvs::masked
