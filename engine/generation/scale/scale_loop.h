#pragma once
// The loop of every next-scale family (VAR's autoregressive_infer_cfg), scale by
// scale through the KvStore: the scale's input runs through the blocks (its
// keys and values appended, attending what the cache retains), the network
// guides the logits (CFG at this scale) and draws the scale's tokens, adding
// them to the feature map f_hat the next scale's input and the previews come
// from. The loop owns what every next-scale family shares: the cache's sizing,
// cancellation before every scale and every layer, the active policy's unit
// hooks (cache_policy.h) wired into the network's observer, the attention
// probe, the logits record and the per-scale callback where an owner may swap
// the policy. A family hands in its network (ScaleNetwork).
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/scale_observer.h"

namespace kvs::scale {

// A family's network as the loop drives it, one object per run: it holds the
// run's condition, its sampler and the feature map built so far.
class ScaleNetwork {
 public:
  virtual ~ScaleNetwork() = default;
  // A cache for `rows` sequences with room for `capacity` positions.
  virtual KvStore make_cache(int64_t rows, int64_t capacity) const = 0;
  // Runs scale si's input (the condition's start at si = 0, else what take()
  // built) through the blocks; returns its logits, rows first (float32).
  virtual at::Tensor forward_scale(int64_t si, KvStore& cache, const ScaleObserver& observer) = 0;
  // Scale si's guided logits [B, ...] from the forward's rows (CFG's
  // combination at this scale; the rows as they are without CFG).
  virtual at::Tensor guide(int64_t si, const at::Tensor& logits) = 0;
  // Draws scale si's ids [B, tokens(si)] (CPU int64) from the guided logits,
  // adds the scale to f_hat and builds the next scale's input.
  virtual at::Tensor take(int64_t si, const at::Tensor& guided) = 0;
  // The feature map accumulated so far [B, C, H, W] (the decoder's input).
  virtual const at::Tensor& f_hat() const = 0;
};

// A run's geometry, from the family's config.
struct ScaleShape {
  int64_t rows = 1;                   // cache rows (2B with CFG)
  std::vector<int64_t> scale_tokens;  // tokens of each scale, first to last
  int64_t total_tokens() const;
  int64_t scale_begin(int64_t si) const;  // sequence position of scale si's first token
};

// What on_scale sees after scale `scale` completed.
struct ScaleStep {
  int64_t scale = 0, scales_total = 0;
  int64_t tokens_done = 0, tokens_total = 0;  // flattened sequence tokens per image
  const at::Tensor* ids = nullptr;            // this scale's ids [B, tokens] (CPU int64)
  const at::Tensor* f_hat = nullptr;          // f_hat so far [B, C, H, W] (device): decode -> preview
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
  // Attention probe for the window: when wants_attention(scale) is true, every
  // layer's attention for that scale's queries (with per-key mass) is passed on.
  std::function<bool(int64_t scale)> wants_attention;
  std::function<void(int64_t layer, int64_t scale, const KvAttention& attention, const KvStore& cache)> on_attention;
  // With wants_attention: a text cross-attention's mass per text token
  // (ScaleObserver::on_text_attention), for networks that have one.
  std::function<void(int64_t layer, int64_t scale, const at::Tensor& text_mass)> on_text_attention;
  // The policy's declared initial entries per segment (CachePolicy::initial_entries;
  // 0 = all L tokens): L or more sizes the store for every token once; less starts
  // it at the first scale, growing and shrinking exactly.
  int64_t cache_capacity_tokens = 0;
  int64_t record_logits_scales = 0;  // keep the guided logits of the first scales
};

struct ScaleResult {
  std::vector<at::Tensor> ids;           // per scale [B, tokens] int64, CPU
  at::Tensor f_hat;                      // final [B, C, H, W]
  std::vector<at::Tensor> scale_logits;  // first record_logits_scales, guided (CPU)
  KvMemoryStats memory;
  // All ids as one flattened multi-scale sequence [B, L] (scale 0 first).
  at::Tensor tokens() const;
};

ScaleResult generate(ScaleNetwork& network, const ScaleShape& shape, const ScaleHooks& hooks = {});

}  // namespace kvs::scale
