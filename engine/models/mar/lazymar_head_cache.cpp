#include "engine/models/mar/lazymar_head_cache.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <string>
#include <utility>

#include "engine/core/errors.h"
#include "engine/models/mar/diffusion_head.h"

namespace kvs {
namespace {

using mar::MarFlops;

// The first `rows` rows of a stored tensor (the official [:x.size(0)] slice).
at::Tensor first_rows(const at::Tensor& stored, int64_t rows, const char* what) {
  if (!stored.defined() || stored.size(0) < rows)
    throw InvalidArgumentError(std::string("diffusion-head cache: no stored ") + what + " for " + std::to_string(rows) +
                               " rows (a cached step ran before a full step)");
  return stored.size(0) == rows ? stored : stored.narrow(0, 0, rows);
}

// forward_with_cfg's output: eps = uncond + cfg * (cond - uncond) in both halves,
// beside the variance columns `rest` of both halves.
at::Tensor guided_output(const at::Tensor& cond_eps, const at::Tensor& uncond_eps, const at::Tensor& rest, double cfg) {
  const at::Tensor half_eps = uncond_eps + (cond_eps - uncond_eps) * cfg;
  return at::cat({at::cat({half_eps, half_eps}, 0), rest}, 1);
}

}  // namespace

LazyMarHeadCache::LazyMarHeadCache(const mar::DiffusionHead& head, const mar::MarConfig& config, int64_t reverse_steps,
                                   int64_t threshold, at::Tensor z, double cfg, mar::MarFlopCounter* flops)
    : head_(head),
      config_(config),
      reverse_steps_(reverse_steps),
      threshold_(threshold),
      z_(std::move(z)),
      cfg_(cfg),
      guided_(cfg != 1.0),
      flops_(flops),
      mlp_(static_cast<size_t>(head.depth())),
      residual_(static_cast<size_t>(head.depth())) {
  if (threshold_ < 1) throw InvalidArgumentError("diffusion-head cache: threshold must be >= 1");
  if (reverse_steps_ < 1) throw InvalidArgumentError("diffusion-head cache: no reverse steps");
  if (guided_ && z_.size(0) % 2 != 0)
    throw InvalidArgumentError("diffusion-head cache: guided condition rows must come in pairs");
}

void LazyMarHeadCache::count(double flops) const {
  if (flops_) flops_->add(flops);
}

at::Tensor LazyMarHeadCache::operator()(const at::Tensor& x, int64_t t, const at::Tensor& original_t) {
  const int64_t expected = next_t_ < 0 ? reverse_steps_ - 1 : next_t_;
  if (t != expected)
    throw InvalidArgumentError("diffusion-head cache: reverse step " + std::to_string(t) +
                               " came out of order (expected " + std::to_string(expected) +
                               "; the loop counts down from " + std::to_string(reverse_steps_ - 1) + ")");
  next_t_ = t - 1;
  const bool warm_up = is_warm_up(t, reverse_steps_);
  if (is_full_step(t, reverse_steps_, threshold_)) {
    ++full_steps_;
    return full(x, original_t);
  }
  ++cached_steps_;
  return cached(x, original_t, warm_up);
}

at::Tensor LazyMarHeadCache::full(const at::Tensor& x, const at::Tensor& original_t) {
  // As forward_with_cfg: the conditional half of x, twice.
  const int64_t half = x.size(0) / 2;
  const at::Tensor input = guided_ ? at::cat({x.narrow(0, 0, half), x.narrow(0, 0, half)}, 0) : x;
  const int64_t rows = input.size(0);
  at::Tensor h = head_.input(input);
  const at::Tensor y = head_.condition(original_t, z_);
  for (int64_t i = 0; i < head_.depth(); ++i) {
    const auto m = head_.modulation(i, y);
    at::Tensor branch = head_.mlp_branch(i, h, m);
    at::Tensor out = h + m.gate * branch;
    mlp_[static_cast<size_t>(i)] = branch;
    if (reuses_residual(i)) residual_[static_cast<size_t>(i)] = out - h;
    h = out;
  }
  at::Tensor out = head_.final_layer(h, y);
  count(MarFlops::head_forward(config_, rows));
  if (!guided_) return out;
  const int64_t channels = head_.in_channels();
  at::Tensor eps = out.narrow(1, 0, channels), rest = out.narrow(1, channels, out.size(1) - channels);
  at::Tensor cond_eps = eps.narrow(0, 0, half), uncond_eps = eps.narrow(0, half, rows - half);
  cfg_difference_ = cond_eps - uncond_eps;
  return guided_output(cond_eps, uncond_eps, rest, cfg_);
}

at::Tensor LazyMarHeadCache::cached(const at::Tensor& x, const at::Tensor& original_t, bool warm_up) {
  const int64_t rows = guided_ ? x.size(0) / 2 : x.size(0);
  const at::Tensor input = x.narrow(0, 0, rows);
  const at::Tensor t = original_t.narrow(0, 0, rows), z = z_.narrow(0, 0, rows);
  at::Tensor h = head_.input(input);
  const at::Tensor y = head_.condition(t, z);
  const int64_t w = config_.diffloss_w;
  double flops = MarFlops::head_condition(config_, rows) + MarFlops::head_input(config_, rows) +
                 MarFlops::head_final(config_, rows);
  for (int64_t i = 0; i < head_.depth(); ++i) {
    const size_t b = static_cast<size_t>(i);
    if (reuses_residual(i)) {
      h = h + first_rows(residual_[b], rows, "residual update");
      continue;
    }
    const auto m = head_.modulation(i, y);
    at::Tensor branch;
    if (warm_up) {
      branch = head_.mlp_branch(i, h, m);
      mlp_[b] = branch;
      flops += MarFlops::head_res_block(config_, rows);
    } else {
      branch = first_rows(mlp_[b], rows, "MLP branch");
      flops += MarFlops::linear(rows, w, 3 * w);  // adaLN_modulation only
    }
    h = h + m.gate * branch;
  }
  at::Tensor out = head_.final_layer(h, y);
  count(flops);
  if (!guided_) return out;
  const int64_t channels = head_.in_channels();
  at::Tensor cond_eps = out.narrow(1, 0, channels), rest = out.narrow(1, channels, out.size(1) - channels);
  const at::Tensor uncond_eps = cond_eps - first_rows(cfg_difference_, rows, "CFG difference");
  return guided_output(cond_eps, uncond_eps, at::cat({rest, rest}, 0), cfg_);  // the conditional variance twice
}

mar::GaussianDiffusion::ModelFn LazyMarHeadCache::model_fn(std::shared_ptr<LazyMarHeadCache> cache) {
  return [cache](const at::Tensor& x, int64_t t, const at::Tensor& original_t) { return (*cache)(x, t, original_t); };
}

}  // namespace kvs
