#pragma once
// `hack` — HACK (Qin, Lv, Lin, Guo, Zhang, Zou, Lin, "Head-Aware KV Cache
// Compression for Efficient Visual Autoregressive Modeling", AAAI 2026, arXiv
// 2504.09261v2) for the next-scale family (VAR), as HeatKV (§2, §4) runs it as a
// baseline: offline binary head classification, a high or a low budget per
// category, a different eviction rule per category, 10 calibration prompts, 3
// sink scales. What the paper states (abstract and method overview; v1's
// abstract for the two patterns):
// - Head classification (offline): attention heads of VAR models are Contextual
//   Heads (semantic consistency; vertical attention patterns: all queries of a
//   scale attend to the same few keys) or Structural Heads (spatial coherence;
//   multi-diagonal patterns: each query attends to its spatial counterparts in
//   the earlier scales); the split is made once, offline, from the attention's
//   variance, and is stable across prompts. Here: head_variance_profile.h, the
//   variance of each head's per-key attention, averaged over the calibration
//   images and the scales; the heads of highest variance are contextual.
// - Asymmetric budget allocation: each category gets its own budget and the
//   average over the heads stays within B (the average KV length per head, so
//   attention costs O(B n^2) instead of O(n^4)).
// - Pattern-specific compression: contextual heads keep the keys their queries
//   pile onto (attention-score selection); structural heads keep what preserves
//   the diagonal: the spatial layout of the recent scales.
// The text of the method section (its equations, default budget ratio and
// classification share) was not available to us; every detail below is our
// choice, and all of them are listed in docs/policies.md#hack:
// - B = budget (tokens per layer and head) or rho x all image tokens, as
//   `streaming`, `snapkv` and `scalekv` take it; the HeatKV paper gives HACK the
//   same per-head share as the other baselines;
// - contextual = share of the (layer, head) pairs classified contextual (default
//   1/2: the median split of the variance, over all layers together); the demo's
//   few heads are split over the whole model, not per layer;
// - ratio = B_c / B_s (default 1/2: contextual heads, whose attention is on a few
//   keys, keep half of what structural heads keep); with f the contextual share,
//   B_s = floor(B / (f ratio + 1 - f)), B_c = floor(ratio B_s), so
//   n_c B_c + n_s B_s <= L H B. A head's budget never falls below the sink
//   scales plus one token: B_c is raised there and B_s pays for it; an average
//   B that cannot hold the sinks plus one token is refused;
// - sinks = the first 3 scales (HeatKV §4's s = 3), kept by every head and
//   counted in its budget;
// - contextual rule: after a layer attended to scale k, its non-sink entries are
//   ranked by the attention all of scale k's queries put on them (summed over the
//   queries and the grouped heads: the column sums of the attention map, which is
//   what a vertical pattern concentrates); the best B_c - sinks stay (ties: the
//   older entry goes first);
// - structural rule: newer scales before older ones, whole (scale k itself
//   first, then k-1, ...); the one scale that only partly fits keeps a spatially
//   uniform subset (its tokens in bit-reversed Morton order, so any prefix is
//   spread evenly over the map), so every query still finds a nearby counterpart
//   on the diagonal;
// - both cut right after each layer attended (after_unit_layer), so a scale's
//   queries always see the scale whole; a layer holds its budget plus the new
//   scale until its cut;
// - CFG pairs: the conditional row decides, its unconditional row mirrors it;
//   every image of a batch decides for itself.
// The calibration reaches the policy through PolicyContext::calibrations while
// it is built (the VAR session reads the bundle's hack_calibration.json, or
// measures it on 10 classes at first use and keeps it with the loaded model);
// without one every head scores alike
// (HeadVarianceProfile::uniform: the first heads in (layer, head) order are
// contextual), which is enough to check the parameters, since the budgets
// depend only on how many heads each category has.
#include <algorithm>
#include <vector>

#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/policy_registry.h"

namespace kvs {

struct HackOptions {
  int64_t budget = 0;       // B, image tokens per layer and head on average
  double contextual = 0.5;  // share of the heads that are contextual
  double ratio = 0.5;       // B_c / B_s
  int64_t sinks = 3;        // sink scales
};

class HackPolicy : public CachePolicy {
 public:
  HackPolicy(const PolicyContext& context, const HackOptions& options);
  std::string name() const override { return "hack"; }
  // The larger of the two budgets (what a segment may hold after a cut).
  int64_t budget_tokens() const override { return std::max(structural_budget_, contextual_budget_); }
  int64_t max_entries() const override;
  int64_t initial_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  bool wants_key_mass() const override { return true; }
  void observe_unit_attention(int64_t layer, int64_t unit, const at::Tensor& key_mass,
                              const at::Tensor& positions) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;
  std::vector<CacheRegion> regions(int64_t positions) const override;

  int64_t average_budget() const { return options_.budget; }
  int64_t contextual_budget() const { return contextual_budget_; }  // B_c
  int64_t structural_budget() const { return structural_budget_; }  // B_s
  bool is_contextual(int64_t layer, int64_t head) const {
    return contextual_.at(static_cast<size_t>(layer * context_.kv_heads + head)) != 0;
  }
  int64_t head_budget(int64_t layer, int64_t head) const {
    return is_contextual(layer, head) ? contextual_budget_ : structural_budget_;
  }
  int64_t sink_tokens() const { return sink_tokens_; }

  // Whether the classes come from a calibration of the model (not the stand-in).
  bool calibrated() const { return calibrated_; }

 private:
  void classify(const HeadVarianceProfile& profile);

  PolicyContext context_;
  HackOptions options_;
  int64_t sink_tokens_ = 0, contextual_budget_ = 0, structural_budget_ = 0;
  bool calibrated_ = false;
  std::vector<uint8_t> contextual_;                 // [layer][head]
  std::vector<at::Tensor> key_mass_;                // per layer: the current scale's attention per slot
  std::vector<std::vector<int64_t>> spatial_rank_;  // per scale: each token's place in the uniform order
};

// The place of every token of a side x side map (row-major) in a spatially
// uniform order: bit-reversed Morton (Z-order) codes over the enclosing power-of-
// two grid, so that the first n tokens are spread evenly over the map for every n.
std::vector<int64_t> spatial_uniform_rank(int64_t side);

PolicyInfo hack_policy_info();

}  // namespace kvs
