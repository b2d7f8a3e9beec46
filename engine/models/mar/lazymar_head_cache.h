#pragma once
// LazyMAR's diffusion-head cache (`lazymar:head_cache=on`). The paper does not
// describe it; it follows the official implementation (feihongyan1/LazyMAR
// models/diffloss_cached.py, cache_type "default", which models/mar_cache.py
// always uses with cache_threshold 7). Within one MAR step's reverse diffusion
// (t = T-1 down to 0, T respaced steps; the cache starts empty at every MAR step):
//
// - full step: t == T-1 or t % threshold == 0. The head runs in full (both CFG
//   halves, as forward_with_cfg) and stores, per ResBlock i, its MLP branch
//   mlp(LN(x)·(1+scale)+shift); for blocks 1-4 its residual update x_out - x_in;
//   and with guidance the difference cond_eps - uncond_eps.
// - cached step (every other t): with guidance only the conditional half runs
//   (x[:n], t[:n], z[:n]). Blocks 1-4 add their stored residual update and run
//   nothing. The other blocks recompute their adaLN modulation from this step's
//   timestep embedding and add gate · (stored MLP branch); in the warm-up
//   (t > 0.9·T) they recompute the MLP branch too and store it. The final layer
//   runs; uncond_eps = cond_eps - stored difference, eps = uncond + cfg·(cond -
//   uncond) in both halves, and the variance columns of the conditional half are
//   used for both halves.
// Stored tensors of the full step cover both halves; a cached step takes their
// first (conditional) rows, as the official code slices [:x.size(0)].
//
// Choices where the official code is silent or cannot run:
// - One threshold drives both the block cache and the CFG cache (the official
//   code has two, cache_threshold and forward_with_cfg's lazy_mar_threshold, both 7).
// - Without guidance (cfg == 1) the official cached head raises a TypeError
//   (forward is called without use_lazy_mar); here the block cache runs on every
//   row and there is no CFG difference to reuse.
// - Heads with fewer than five blocks reuse the residual updates of the blocks
//   1-4 they have (the demo head, 3 blocks: blocks 1 and 2).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/mar_config.h"
#include "engine/models/mar/mar_flops.h"

namespace kvs::mar {
class DiffusionHead;
}

namespace kvs {

class LazyMarHeadCache {
 public:
  // `z` [rows, D]: the step's condition rows (with guidance: conditional rows,
  // then unconditional). `cfg` == 1: no guidance. `flops` (may be null) receives
  // what each call executes.
  LazyMarHeadCache(const mar::DiffusionHead& head, const mar::MarConfig& config, int64_t reverse_steps,
                   int64_t threshold, at::Tensor z, double cfg, mar::MarFlopCounter* flops);

  static bool is_full_step(int64_t t, int64_t reverse_steps, int64_t threshold) {
    return t == reverse_steps - 1 || t % threshold == 0;
  }
  // The official ResBlock warm-up: the MLP branch is recomputed at every t > 0.9·T.
  static bool is_warm_up(int64_t t, int64_t reverse_steps) {
    return static_cast<double>(t) > 0.9 * static_cast<double>(reverse_steps);
  }
  // Blocks whose residual update is reused at cached steps (official: 1, 2, 3, 4).
  static bool reuses_residual(int64_t block) { return block >= 1 && block <= 4; }

  // One reverse step: x [rows, C], t (respaced, counted down from T-1),
  // original_t [rows] -> [rows, 2C], as GaussianDiffusion::ModelFn.
  at::Tensor operator()(const at::Tensor& x, int64_t t, const at::Tensor& original_t);

  int64_t full_steps() const { return full_steps_; }
  int64_t cached_steps() const { return cached_steps_; }

  // A GaussianDiffusion::ModelFn over a shared cache (the function is copied by value).
  static mar::GaussianDiffusion::ModelFn model_fn(std::shared_ptr<LazyMarHeadCache> cache);

 private:
  at::Tensor full(const at::Tensor& x, const at::Tensor& original_t);
  at::Tensor cached(const at::Tensor& x, const at::Tensor& original_t, bool warm_up);
  void count(double flops) const;

  const mar::DiffusionHead& head_;
  mar::MarConfig config_;
  int64_t reverse_steps_ = 0, threshold_ = 1;
  at::Tensor z_;
  double cfg_ = 1.0;
  bool guided_ = false;
  mar::MarFlopCounter* flops_ = nullptr;
  std::vector<at::Tensor> mlp_;       // per block: the stored MLP branch
  std::vector<at::Tensor> residual_;  // per block (1-4): the stored x_out - x_in
  at::Tensor cfg_difference_;         // cond_eps - uncond_eps of the last full step
  int64_t full_steps_ = 0, cached_steps_ = 0;
  int64_t next_t_ = -1;  // the t expected next (the loop counts down)
};

}  // namespace kvs
