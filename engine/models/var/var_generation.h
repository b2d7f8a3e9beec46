#pragma once
// VAR's autoregressive_infer_cfg (models/var.py) on the next-scale floor
// (engine/generation/scale): what is VAR's own here is the network behind the
// loop, per scale:
//   - CFG as one doubled batch [cond; null class] (the cache holds both halves as
//     CFG pairs); at scale si the logits are (1 + t) cond - t uncond with the
//     linear ramp t = cfg * si / (scales - 1). cfg = 0 runs the conditional rows
//     only (identical result: t is then 0 at every scale);
//   - the scale's ids are drawn by the ScaleSampler (VAR's top-k / top-p order);
//   - f_hat accumulates every scale (bicubic up + phi), the next scale's input is
//     f_hat area-downsampled, word-embedded and repeated for the CFG halves;
//   - the image is fhat_to_img(f_hat) (* 0.5 + 0.5 gives upstream's [0, 1] return).
// The loop (cache sizing, cancellation, the policy's unit hooks, the attention
// probe, the per-scale callback) is the floor's.
#include <ATen/core/Tensor.h>

#include <memory>

#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/scale/scale_loop.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/models/var/var_transformer.h"
#include "engine/sampling/sampling_params.h"

namespace kvs::var {

using scale::ScaleHooks;
using scale::ScaleResult;
using scale::ScaleStep;

struct ScaleParams {
  double cfg = 1.5;  // upstream's `cfg`; t ramps linearly from 0 at the first scale to cfg at the last
  SamplingParams sampling;
  uint64_t seed = 0;  // g_seed
};

// The policy context of a VAR generation: one unit per scale; the final token map
// is the grid; no condition entries (the class enters through AdaLN and the first
// scale's token, which is an ordinary scale-0 entry at position 0).
PolicyContext scale_policy_context(const VarConfig& config, int64_t batch, bool cfg, uint64_t seed);

// The run's geometry: its cache rows and the tokens of each scale.
scale::ScaleShape scale_shape(const VarConfig& config, int64_t batch, bool cfg);

// VAR's network for one run on class ids `labels` [B] (checked; the null class
// added for CFG's unconditional rows).
std::unique_ptr<scale::ScaleNetwork> class_conditioned_var(const VarTransformer& transformer,
                                                           const MultiScaleVqvae& vqvae, const at::Tensor& labels,
                                                           const ScaleParams& params);

ScaleResult generate_scales(const VarTransformer& transformer, const MultiScaleVqvae& vqvae, const at::Tensor& labels,
                            const ScaleParams& params, const ScaleHooks& hooks = {});

}  // namespace kvs::var
