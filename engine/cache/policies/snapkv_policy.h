#pragma once
// `snapkv` — SnapKV (Li et al., "SnapKV: LLM Knows What You are Looking for Before
// Generation", 2024, §4.1-4.2), applied at line ends as the image papers apply the
// LLM baselines: the queries of an observation window (default one line) vote for
// the older entries (softmax attention summed over the window and grouped heads),
// the votes are max-pooled over slot order, and the best stay, so each segment
// drops to B - n image entries at every line end (a one-line buffer).
// The observation window and the line-end cut here are shared with `rkv`.
// Next-scale models: the observation window is the current scale's queries, the
// votes are cast right after each layer attended (after_unit_layer) and the
// layer is cut to B there: the current scale stays whole (SnapKV keeps its
// window) with the best-voted older entries; a scale of B tokens or more competes
// with itself for the B places. A layer holds B plus the new scale until its cut.
// Choices where the paper is silent: docs/policies.md#snapkv
#include <functional>
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

// The queries of the most recent `window` steps of every layer (SnapKV's observation
// window; R-KV uses the same importance). Buffers live on the queries' device.
class ObservationWindow {
 public:
  ObservationWindow(int64_t n_layer, int64_t window);
  int64_t window() const { return window_; }
  void observe(int64_t layer, int64_t token_index, const at::Tensor& queries);
  // Queries [rows, n_head, w, head_dim] of the observed steps among the last
  // `window` ones ending at token_index (w <= window; undefined when none), with
  // their token indices.
  at::Tensor recent(int64_t layer, int64_t token_index, std::vector<int64_t>* token_indices) const;

 private:
  int64_t window_;
  std::vector<at::Tensor> buffers_;           // per layer [rows, n_head, window, head_dim]
  std::vector<std::vector<int64_t>> tokens_;  // per layer, token index held by each buffer slot (-1: none)
};

// How the votes are smoothed over slot order: SnapKV's max pooling, or the
// average pooling ScaleKV (§3.3) names.
enum class ObservationPooling { Max, Average };

// Observation-window importance of every slot of `layer`, [rows, kv_heads, L] CPU
// float (L = the layer's max length): the window queries' attention (causal
// softmax over all retained entries, summed over queries and grouped heads),
// pooled over the slot order of `candidates` (bool [rows, kv_heads, L], CPU;
// average pooling averages the candidates within the kernel only).
// Non-candidate slots hold -inf. queries: [>= rows, n_head, w, head_dim]. A
// next-scale unit's queries see the whole unit: pass the unit's last position
// as every query's position. The votes come from the scoring kernels or from
// LibTorch (observation_votes_torch), as policy_scoring_on_kernels() decides;
// with on_store_device the kernels' votes, the pooling and the result stay on a
// GPU store's device.
at::Tensor observation_importance(const KvStore& store, int64_t layer, const at::Tensor& queries,
                                  const std::vector<int64_t>& query_positions, const at::Tensor& candidates,
                                  int64_t kernel, ObservationPooling pooling = ObservationPooling::Max,
                                  bool on_store_device = false);

// The votes alone as LibTorch computes them (a padded key copy, the logits, masked
// softmax, sum): float CPU [rows, kv_heads, L], 0 where no query sees the entry.
// observation_importance takes them from the scoring kernels where
// policy_scoring_on_kernels() says so (line_saliency.h); this is the reference.
at::Tensor observation_votes_torch(const KvStore& store, int64_t layer, const at::Tensor& queries,
                                   const std::vector<int64_t>& query_positions);

// Checks window >= 1, an odd kernel >= 1 and B >= window + n + 1 (the always-kept
// window, the one-line buffer and one scored entry); errors name `policy`.
void check_observation_budget(const std::string& policy, const PolicyContext& context, int64_t budget_tokens,
                              int64_t window, int64_t kernel);

// The line-end step that snapkv and rkv share (they differ only in scoring): at
// each line end, per layer, every segment holding more than B - n image entries
// is cut to B - n by evicting the lowest-scored candidates (image entries older
// than the observation window). `score` gets the layer, its slots, the
// candidates and the window's queries (undefined when none were observed) with
// their sequence positions, and returns float [rows, kv, L] for all rows; the
// decision rows' scores (plus the unconditional rows' with decide_on_both) decide.
using ObservationScorer =
    std::function<at::Tensor(int64_t layer, const ImageSlots& slots, const at::Tensor& candidates,
                             const at::Tensor& queries, const std::vector<int64_t>& query_positions)>;
void evict_at_line_end(KvStore& store, int64_t token_index, const PolicyContext& context, int64_t budget_tokens,
                       const ObservationWindow& window, bool decide_on_both, const ObservationScorer& score);

class SnapKvPolicy : public CachePolicy {
 public:
  SnapKvPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t window, int64_t kernel,
               bool decide_on_both);
  std::string name() const override { return "snapkv"; }
  int64_t budget_tokens() const override { return budget_; }
  int64_t max_entries() const override;
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return !context_.unit_tokens.empty(); }
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

 private:
  PolicyContext context_;
  int64_t budget_, kernel_;
  bool decide_on_both_;
  ObservationWindow window_;
  std::vector<at::Tensor> unit_queries_;  // next-scale models: per layer, the current scale's queries
};

PolicyInfo snapkv_policy_info();

}  // namespace kvs
