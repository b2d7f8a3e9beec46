#pragma once
// MAR's per-token diffusion head (LTH14/mar models/diffloss.py SimpleMLPAdaLN:
// TimestepEmbedder, ResBlocks with adaLN modulation, FinalLayer), ported to
// match the official code numerically. Output columns [0, C) are the predicted
// noise eps, [C, 2C) the learned-range variance interpolation values.
//
// The pieces (condition, input, res_block and its two halves, final_layer) are
// public so that LazyMAR's diffusion-head cache (engine/cache/policies/
// engine/models/mar/lazymar_head_cache.h) can reuse block outputs across reverse steps.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

class DiffusionHead {
 public:
  // `weights`: SimpleMLPAdaLN names without prefix ("time_embed.mlp.0.weight", ...).
  // `dtype`: what the weights and activations are kept in (the run-time dtype).
  // The timestep frequencies, LayerNorm statistics and the output (eps and the
  // variance values the diffusion sampler reads) are float32 whatever it is.
  DiffusionHead(const MarConfig& config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                at::ScalarType dtype = at::kFloat);

  int64_t in_channels() const { return in_channels_; }
  int64_t width() const { return width_; }
  int64_t depth() const { return static_cast<int64_t>(blocks_.size()); }

  // TimestepEmbedder.timestep_embedding: [cos, sin] (cos first) of
  // t * exp(-ln(max_period) * i / (dim/2)), i < dim/2 (float32, as upstream).
  static at::Tensor timestep_embedding(const at::Tensor& t, int64_t dim, double max_period = 10000.0);

  // SimpleMLPAdaLN.forward(x [N, C], t [N] (original timestep ids), c [N, z_channels]) -> [N, 2C].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& c) const;
  // forward_with_cfg: runs x[:N/2] twice (conditional and unconditional halves of
  // c), eps = uncond + cfg * (cond - uncond) in both halves, variance columns per half.
  at::Tensor forward_with_cfg(const at::Tensor& x, const at::Tensor& t, const at::Tensor& c, double cfg_scale) const;

  // --- pieces ---
  at::Tensor condition(const at::Tensor& t, const at::Tensor& c) const;  // y = time_embed(t) + cond_embed(c)
  at::Tensor input(const at::Tensor& x) const;                           // input_proj
  // ResBlock i: x + gate * mlp(LN(x) * (1 + scale) + shift), (shift, scale, gate) = adaLN(y).
  at::Tensor res_block(int64_t i, const at::Tensor& x, const at::Tensor& y) const;
  // res_block's halves (res_block(i, x, y) == x + modulation(i, y).gate * mlp_branch(i, x, modulation(i, y)),
  // the same operations): adaLN_modulation(y) and the MLP branch.
  struct Modulation {
    at::Tensor shift, scale, gate;
  };
  Modulation modulation(int64_t i, const at::Tensor& y) const;
  at::Tensor mlp_branch(int64_t i, const at::Tensor& x, const Modulation& m) const;
  at::Tensor final_layer(const at::Tensor& x, const at::Tensor& y) const;

 private:
  struct ResBlock {
    at::Tensor ln_w, ln_b, mlp0_w, mlp0_b, mlp2_w, mlp2_b, ada_w, ada_b;
  };
  int64_t in_channels_ = 0, width_ = 0;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor time0_w_, time0_b_, time2_w_, time2_b_, cond_w_, cond_b_, input_w_, input_b_;
  at::Tensor final_ada_w_, final_ada_b_, final_w_, final_b_;
  std::vector<ResBlock> blocks_;
};

}  // namespace kvs::mar
