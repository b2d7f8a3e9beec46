#pragma once
// `scalekv` — ScaleKV (Li, Chen, Yang, Hwang, "Memory-Efficient Visual
// Autoregressive Modeling with Scale-Aware KV Cache Compression", 2025, arXiv
// 2505.19602, §3.3) for the next-scale family (VAR).
// - Drafters and refiners (§3.3, Eq. 2-3): an offline full-cache calibration
//   measures each layer's Attention Selectivity Index at every scale
//   (layer_selectivity_profile.h); the layer-scale pairs of lowest Z-score are
//   drafters (they attend broadly to earlier scales), the others refiners.
// - Budget allocation (Eq. 4): refiners get B_r(k) = B_r(0) - delta k, the
//   drafters share what the refiners leave of the uniform budget, so every scale
//   uses the memory of a uniform budget B_u per layer.
// - Token selection (Eq. 5): the centroid tokens of N patches of the current token
//   map form the observation window W; every other entry i is scored per head with
//   s_i = sum over W's queries of softmax(q K^T / sqrt(d))_i, average pooled over
//   slot order; a layer keeps W and its top B_l(k) - |W| entries, right after the
//   layer attended (so a scale's queries always see the scale whole).
// The calibration reaches the policy through PolicyContext::calibrations while
// it is built (the VAR session reads the bundle's scalekv_calibration.json or
// measures one once per loaded model); without one every layer scores alike
// (LayerSelectivityProfile::uniform), which is enough to check the parameters.
// Choices where the source is silent (every one listed in docs/policies.md#scalekv):
// - B_u = rho x (all image tokens), the budget `streaming`, `h2o` and `snapkv` keep
//   per layer at the same rho (the paper's percentages are of the cache without
//   the last scale: 650 tokens per layer is its 10 % on Infinity-2B);
// - Eq. 4 is held at every scale, not only summed over the scales: the drafters at
//   scale k get (L B_u - N_r^k B_r(k)) / N_d^k, capped at the tokens that exist
//   (c_k); what a cap leaves goes back to the refiners; a scale without drafters
//   (or without refiners) gives every layer B_u. Scales whose whole cache fits in
//   B_u are not compressed and take no part in the drafter ranking;
// - k in B_r(k) counts from the first compressed scale; B_r(0) = refiner_start x
//   B_u and delta = decay x B_u (defaults 0.92 and 0.11: the paper's ablation, 600
//   tokens and 70 per scale at 650, §4.3 / Figure 6c); B_r(k) never drops below
//   the window |W_k|;
// - N_d = round(drafters x pairs) over the compressed scales' pairs (default 1/6:
//   one drafter per scale on a 6-layer model; the paper gives no N_d);
// - ASI: the product of Eq. 2 as printed; E_i also averages the heads and the
//   calibration images; K' = top_k (default 16, the paper gives none);
// - W: the patch grid is sqrt(N) x sqrt(N) (N = window, a perfect square, default
//   16 as the paper's "typically 16 tokens"), patches split the map into nearly
//   equal bands, the centroid is the patch's middle token (lower middle when even);
//   a map with fewer rows than sqrt(N) uses every token as its own patch;
// - average pooling over the candidates' slot order, kernel 5 (the paper names
//   the pooling, not its size); decisions on the conditional row of a CFG pair.
// scoring=official selects tokens as the authors' release does instead
// (StargazerX0/ScaleKV, scale_kv.py, ScaleKVCluster.update_kv): raw logits
// q K^T / sqrt(d) summed over the window's queries, the window's own entries set
// to -inf before max pooling over slot order (so their scores never reach their
// neighbours), the window at the release's patch centres, and on a map with
// fewer rows than sqrt(N) the cache's last N entries as the window. The budgets
// are Eq. 4's in both. docs/policies.md#scalekv says which is the default and why.
#include <vector>

#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/snapkv_policy.h"

namespace kvs {

// How the entries outside the observation window are scored (Eq. 5).
enum class ScaleKvScoring {
  Paper,     // softmax attention of the window's queries, summed, then pooled as ScaleKvOptions::pooling says
  Official,  // the release's: raw logits summed, the window masked before max pooling, its window placement
};

struct ScaleKvOptions {
  int64_t budget = 0;           // B_u, tokens per layer and head
  double drafters = 1.0 / 6.0;  // share of the compressed layer-scale pairs that are drafters
  double refiner_start = 0.92;  // B_r(0) / B_u
  double decay = 0.11;          // delta / B_u, per scale
  int64_t window = 16;          // N patches (observation window tokens)
  int64_t kernel = 5;           // pooling kernel (odd)
  ObservationPooling pooling = ObservationPooling::Average;  // Paper scoring; Official max-pools
  ScaleKvScoring scoring = ScaleKvScoring::Paper;
  int64_t top_k = 16;  // K' of the ASI (the calibration's)
};

class ScaleKvPolicy : public CachePolicy {
 public:
  ScaleKvPolicy(const PolicyContext& context, const ScaleKvOptions& options);
  std::string name() const override { return "scalekv"; }
  // The most any layer keeps after a scale (a drafter's budget).
  int64_t budget_tokens() const override { return max_budget_; }
  int64_t max_entries() const override;
  int64_t initial_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t unit, const at::Tensor& queries) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

  // Whether the plan comes from a calibration of the model (not the stand-in).
  bool calibrated() const { return calibrated_; }
  int64_t top_k() const { return options_.top_k; }

  int64_t uniform_budget() const { return options_.budget; }
  // B_l(k): what layer l keeps after scale k (c_k where the scale is not compressed).
  int64_t layer_budget(int64_t layer, int64_t scale) const;
  bool is_drafter(int64_t layer, int64_t scale) const;
  // The observation window of a scale: indices within the scale's token map
  // (empty with official scoring on a map with fewer rows than sqrt(window): the
  // window is then the cache's last `window` entries).
  const std::vector<int64_t>& window_tokens(int64_t scale) const { return windows_.at(static_cast<size_t>(scale)); }
  // Entries the window holds at a scale (always kept).
  int64_t window_size(int64_t scale) const;
  ScaleKvScoring scoring() const { return options_.scoring; }

 private:
  size_t index(int64_t layer, int64_t scale) const { return static_cast<size_t>(layer * scales_ + scale); }
  void plan(const LayerSelectivityProfile& profile);
  // The release's window after `unit`: its flags over the slots (bool [rows,
  // kv_heads, L]) and, in `reads`, how many window entries read each of the
  // unit's queries ([rows, kv_heads, T] float).
  at::Tensor official_window(const ImageSlots& slots, int64_t unit, at::Tensor* reads) const;
  // The release's pooled scores of every slot (float [rows, kv_heads, L] CPU,
  // -inf outside the candidates).
  at::Tensor official_scores(const KvStore& store, int64_t layer, const ImageSlots& slots, const at::Tensor& in_window,
                             const at::Tensor& reads, const at::Tensor& queries) const;

  PolicyContext context_;
  ScaleKvOptions options_;
  int64_t scales_ = 0, max_budget_ = 0;
  bool calibrated_ = false;
  std::vector<int64_t> budgets_;               // [layer][scale]
  std::vector<uint8_t> drafter_;               // [layer][scale]
  std::vector<std::vector<int64_t>> windows_;  // per scale
  std::vector<at::Tensor> queries_;            // per layer: the current scale's queries
};

// The patch-centroid tokens (indices into a side x side map, row-major, sorted)
// of a sqrt(window) x sqrt(window) patch grid.
std::vector<int64_t> patch_centroid_tokens(int64_t side, int64_t window);
// The release's window on a side x side map (scale_kv.py,
// _select_window_indices): patches of floor(side / g) rows and columns (g =
// sqrt(window)), the token at offset (p - 1) / 2 in each, the last side mod g rows
// and columns in no patch; empty when side < g (the release then takes the
// cache's last `window` entries).
std::vector<int64_t> official_window_tokens(int64_t side, int64_t window);

PolicyInfo scalekv_policy_info();

}  // namespace kvs
