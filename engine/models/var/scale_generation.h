#pragma once
// VAR's autoregressive_infer_cfg (models/var.py), scale by scale through the KvStore:
//   - CFG as one doubled batch [cond; null class] (the cache holds both halves as
//     CFG pairs); at scale si the logits are (1 + t) cond - t uncond with the
//     linear ramp t = cfg * si / (scales - 1). cfg = 0 runs the conditional rows
//     only (identical result: t is then 0 at every scale);
//   - the scale's ids are drawn by the ScaleSampler (VAR's top-k / top-p order);
//   - f_hat accumulates every scale (bicubic up + phi), the next scale's input is
//     f_hat area-downsampled, word-embedded and repeated for the CFG halves;
//   - the image is fhat_to_img(f_hat) (* 0.5 + 0.5 gives upstream's [0, 1] return).
// Hooks let an owner stop between layers, see every scale as it completes (ids,
// f_hat for a preview, the cache), swap the cache policy at a scale boundary and
// observe attention; the policy's unit hooks (cache_policy.h) run inside.
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/models/var/var_transformer.h"
#include "engine/sampling/sampling_params.h"

namespace kvs::var {

struct ScaleParams {
  double cfg = 1.5;  // upstream's `cfg`; t ramps linearly from 0 at the first scale to cfg at the last
  SamplingParams sampling;
  uint64_t seed = 0;  // g_seed
};

// What on_scale sees after scale `scale` completed.
struct ScaleStep {
  int64_t scale = 0, scales_total = 0;
  int64_t patch_num = 0;
  int64_t tokens_done = 0, tokens_total = 0;  // flattened sequence tokens per image
  const at::Tensor* ids = nullptr;            // this scale's ids [B, pn*pn] (CPU int64)
  const at::Tensor* f_hat = nullptr;          // f_hat so far [B, Cvae, H, W] (device): fhat_to_img -> preview
  const KvStore* cache = nullptr;
};

struct ScaleHooks {
  // Checked before every scale and every layer; true -> CancelledError.
  std::function<bool()> cancelled;
  std::function<void(const ScaleStep& step)> on_scale;
  // The active cache policy (nullptr or unset = full cache), asked before every
  // scale, so its owner may swap it at a scale boundary (from on_scale): the new
  // policy adopts the cache as it stands.
  std::function<CachePolicy*()> policy;
  // Attention probe for the UI: when wants_attention(scale) is true, every layer's
  // attention for that scale's queries (with per-key mass) is passed on.
  std::function<bool(int64_t scale)> wants_attention;
  std::function<void(int64_t layer, int64_t scale, const KvAttention& attention, const KvStore& cache)> on_attention;
  // The policy's declared initial entries per segment (CachePolicy::initial_entries;
  // 0 = all L tokens): L or more sizes the store for every token once; less starts
  // it at the first scale, growing and shrinking exactly (generate_scales).
  int64_t cache_capacity_tokens = 0;
  int64_t record_logits_scales = 0;  // keep the CFG-combined logits of the first scales
};

struct ScaleResult {
  std::vector<at::Tensor> ids;           // per scale [B, pn*pn] int64, CPU
  at::Tensor f_hat;                      // final [B, Cvae, H, W]
  std::vector<at::Tensor> scale_logits;  // first record_logits_scales, each [B, pn*pn, V] (CPU)
  KvMemoryStats memory;
  // All ids as one flattened multi-scale sequence [B, L] (scale 0 first).
  at::Tensor tokens() const;
};

// The policy context of a VAR generation: one unit per scale; the final token map
// is the grid; no condition entries (the class enters through AdaLN and the first
// scale's token, which is an ordinary scale-0 entry at position 0).
PolicyContext scale_policy_context(const VarConfig& config, int64_t batch, bool cfg, uint64_t seed);

ScaleResult generate_scales(const VarTransformer& transformer, const MultiScaleVqvae& vqvae, const at::Tensor& labels,
                            const ScaleParams& params, const ScaleHooks& hooks = {});

}  // namespace kvs::var
