#pragma once
// `heatkv` — HeatKV (Head-tuned KV-cache compression, ../shared/papers/heatkv.txt
// §3) for the next-scale family (VAR). Offline, a calibration with the full cache
// measures the scale-to-scale attention mass beta (Eq. 2; ScaleAttentionProfile).
// From it:
//   - CAS (Eq. 3) orders the heads O from least to most dependent on cached
//     tokens; S-CAS (Eq. 4) orders the heads O_i for every non-sink source scale i;
//   - N_k = ceil(T (c_k - b c_{K-1}) / (c_k - c_s)) heads (Eq. 5, T = layers x
//     heads) must have dropped their non-sink scales after scale k, so that the
//     cache holds at most B = b T c_{K-1} entries per image;
//   - Algorithm 1: G_k = Prefix(O, N_k) (binary variant: whole heads keep only the
//     s sink scales) or the union over source scales i <= k of Prefix(O_i, N_k)
//     (scale-dependent variant: head-scales); GreedyEarlyPruning picks the fewest
//     elements of G_k \ G_{k-1} (by layer descending, source scale descending, rank
//     ascending) to evict before scale k starts so that CacheSizeAfterLayer
//     (Algorithm 2) stays <= B after every layer; the rest of G_k is evicted right
//     after its layer ran. pruning=naive evicts all of G_k \ G_{k-1} up front (the
//     ablation of Table 3c).
// The plan is fixed before generation (it depends only on the calibration), so
// every image and both halves of a CFG pair keep the same head-scales.
//
// Choices where the paper is silent:
// - Scales are 0-based here: sinks are scales [0, s), c_k counts the tokens of
//   scales [0, k], the last scale K-1 is never cached (its entries are in the store
//   while its own layer attends, then dropped), so c_{K-1} (the paper's, 1-based)
//   = the tokens of scales [0, K-2] and no plan is made for the last scale.
// - "Before scale k starts" = when scale k's first layer is about to attend (the
//   before_unit_attention of layer 0): the early-pruned head-scales are evicted in
//   every layer at once. A scale's own entries are never evicted before its own
//   queries attend (the scale's self-attention); an early-pruned head-scale of the
//   current scale is evicted right after its layer, like the others. Algorithm 2
//   counts scale k's tokens in every layer not yet run, which bounds the real cache
//   from above, so the budget holds after every layer.
// - Budget b is a fraction of c_{K-1} per head (the paper's B = b T c_{K-1});
//   b must leave room for the sinks (b c_{K-1} >= c_s).
// - CAS is divided by K - s as printed (a constant factor: orders are unaffected).
//   Ties in any order go to the lower (layer, head) index.
// - budget_tokens() is the most one segment can hold after a layer (c_{K-1}):
//   HeatKV's budget is a total over heads, total_budget_tokens().
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

struct HeatKvOptions {
  double budget = 0.1;   // b
  int64_t sinks = 3;     // s, in scales
  bool binary = false;   // Binary-HeatKV (whole heads) instead of head-scales
  bool naive = false;    // E_k = G_k \ G_{k-1}
};

class HeatKvPolicy : public CachePolicy {
 public:
  HeatKvPolicy(const PolicyContext& context, const HeatKvOptions& options);
  std::string name() const override { return "heatkv"; }
  int64_t budget_tokens() const override;
  int64_t max_entries() const override { return context_.image_tokens(); }
  int64_t initial_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  void before_unit_attention(KvStore& store, int64_t layer, int64_t unit) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

  // B = floor(b x layers x heads x c_{K-1}): image entries per image over all layers and heads.
  int64_t total_budget_tokens() const { return total_budget_; }
  int64_t heads_to_prune(int64_t scale) const { return n_prune_.at(static_cast<size_t>(scale)); }  // N_k
  int64_t early_pruned(int64_t scale) const { return early_count_.at(static_cast<size_t>(scale)); }  // |E_k|
  // Whether head-scale (source, layer, head) is absent at the start / at the end of scale k.
  bool absent_at_start(int64_t scale, int64_t source, int64_t layer, int64_t head) const;
  bool absent_at_end(int64_t scale, int64_t source, int64_t layer, int64_t head) const;
  // Algorithm 2's count for scale k after `layer` ran (the bound the plan keeps <= B).
  int64_t planned_size_after_layer(int64_t scale, int64_t layer) const;

 private:
  using HeadScaleSet = std::vector<uint8_t>;  // [source scale][layer][head]
  size_t index(int64_t source, int64_t layer, int64_t head) const {
    return static_cast<size_t>((source * context_.n_layer + layer) * context_.kv_heads + head);
  }
  void plan(const ScaleAttentionProfile& profile);
  int64_t cached_tokens(const HeadScaleSet& absent, int64_t scale, int64_t layer, int64_t head) const;
  void evict(KvStore& store, int64_t layer, const HeadScaleSet& absent, int64_t max_source) const;

  PolicyContext context_;
  HeatKvOptions options_;
  int64_t scales_ = 0, sink_tokens_ = 0, total_budget_ = 0;
  std::vector<HeadScaleSet> start_, end_;  // A_k and G_k per scale
  std::vector<int64_t> n_prune_, early_count_;
};

PolicyInfo heatkv_policy_info();

}  // namespace kvs
