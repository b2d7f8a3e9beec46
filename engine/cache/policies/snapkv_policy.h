#pragma once
// `snapkv` — SnapKV (Li et al., "SnapKV: LLM Knows What You are Looking for Before
// Generation", 2024, §4.1-4.2), applied at line ends as the image papers use the
// LLM baselines: an observation window of the most recent queries votes for the
// older entries, the votes are smoothed by 1-D pooling and the top entries stay.
// Per layer, per (row, KV head):
//   - budget B image tokens; no eviction while a segment holds at most B - n image
//     entries (n = line width);
//   - at the end of every line (after the step whose input is the line's last
//     token), score every retained entry older than the observation window (the
//     last `window` tokens) with the attention of the window's queries:
//     S_j = sum over window queries and grouped query heads of
//     softmax(q K^T / sqrt(d))_j (SnapKV Eq. for C = sum over the window),
//     smooth with max pooling over slot order (kernel `kernel`, stride 1, same
//     padding) and keep the best, so the segment drops to B - n image entries: a
//     one-line buffer for the next line, so it never exceeds B.
//
// Choices where the papers are silent (LineAR and HeadKV cite SnapKV but do not run
// it; SnapKV's own defaults vary between its releases):
// - Compression at line ends, down to B - n (the cadence LineAR uses for its own
//   policy and for R-KV); it fires whenever a segment holds more than B - n image
//   entries, so a B that is not a multiple of n is still never exceeded. With B a
//   multiple of n this is "once the segment holds B entries".
// - window = one line (n queries) by default, kernel = 7 with max pooling (SnapKV's
//   released configuration); both parameters. The kernel must be odd ("same"
//   padding = kernel / 2 keeps one score per slot).
// - The softmax runs over ALL retained entries of the segment (condition, older
//   entries and the window itself), with the causal mask the model applies (a
//   window query does not see window entries after it), as SnapKV's observation
//   attention does; the scores of the entries older than the window are then used.
// - Grouped-query attention: the vote of a KV head sums the query heads sharing it.
// - Pooling runs over the slot order of the eviction candidates only (the image
//   entries older than the window; evicted gaps are skipped): the condition token
//   is always kept and its key (zero in LlamaGen) says nothing about its neighbours.
// - The condition token(s) and the observation window are always kept; a budget
//   that cannot hold the window, the one-line buffer and one scored entry
//   (B < window + n + 1) is an error.
// - CFG: the decision is taken on the conditional row (cfg_decision=cond, default)
//   or on the sum of both rows' pooled scores (cfg_decision=both) and applied to
//   both rows of the pair.
// - Adopting a larger cache (a policy change mid-run) evicts as many entries as
//   needed at the next line end to get back to B - n; a window query not observed
//   since the adoption is left out of the vote (none observed: the oldest go first).
// - Ties: the older entry is evicted first.
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
  std::vector<at::Tensor> buffers_;             // per layer [rows, n_head, window, head_dim]
  std::vector<std::vector<int64_t>> tokens_;    // per layer, token index held by each buffer slot (-1: none)
};

// Observation-window importance of every slot of `layer`, [rows, kv_heads, L] CPU
// float (L = the layer's max length): the window queries' attention (causal
// softmax over all retained entries, summed over queries and grouped heads), max
// pooled over the slot order of `candidates` (bool [rows, kv_heads, L], CPU).
// Non-candidate slots hold -inf. queries: [>= rows, n_head, w, head_dim].
at::Tensor observation_importance(const KvStore& store, int64_t layer, const at::Tensor& queries,
                                  const std::vector<int64_t>& query_positions, const at::Tensor& candidates,
                                  int64_t kernel);

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
using ObservationScorer = std::function<at::Tensor(int64_t layer, const ImageSlots& slots, const at::Tensor& candidates,
                                                   const at::Tensor& queries, const std::vector<int64_t>& query_positions)>;
void evict_at_line_end(KvStore& store, int64_t token_index, const PolicyContext& context, int64_t budget_tokens,
                       const ObservationWindow& window, bool decide_on_both, const ObservationScorer& score);

class SnapKvPolicy : public CachePolicy {
 public:
  SnapKvPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t window, int64_t kernel, bool decide_on_both);
  std::string name() const override { return "snapkv"; }
  int64_t budget_tokens() const override { return budget_; }
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  void after_token(KvStore& store, int64_t token_index) override;

 private:
  PolicyContext context_;
  int64_t budget_, kernel_;
  bool decide_on_both_;
  ObservationWindow window_;
};

PolicyInfo snapkv_policy_info();

}  // namespace kvs
