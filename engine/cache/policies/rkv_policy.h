#pragma once
// `rkv` — R-KV (Cai et al., "R-KV: Redundancy-aware KV Cache Compression for
// Reasoning Models", 2025, §3), the redundancy-aware baseline of LineAR §4.2 and
// HeadKV §5.2. Per layer, per (row, KV head), at the end of every line once a
// segment holds more than B - n image entries (n = line width):
//   - importance I_j: the observation window's attention on entry j, exactly as
//     `snapkv` computes it (causal softmax over all retained entries, summed over
//     the window queries and the grouped query heads, max pooled over slot order),
//     normalised to sum 1 over the eviction candidates;
//   - redundancy R_j: the mean cosine similarity of key j to the other retained
//     image keys of the segment, normalised with a softmax over the candidates
//     (R-KV's softmax normalisation of the similarity scores);
//   - score Z_j = lambda * I_j - (1 - lambda) * R_j; the candidates with the lowest
//     Z go until the segment holds B - n image entries (a one-line buffer for the
//     next line), so it never exceeds B.
//
// Choices where the papers are silent or where we simplify:
// - LineAR and HeadKV give no R-KV settings. R-KV's README defaults are a 128-token
//   buffer, alpha = 8 observation queries and lambda = 0.1; a 128 buffer exceeds
//   the image budgets, so (as linear.md §4 proposes) the buffer is one line: the
//   cut happens at line ends, down to B - n. The observation window defaults to
//   one line (window=8 gives R-KV's alpha); it is always kept. lambda = 0.1, pooling
//   kernel 7 (max), all parameters.
// - The cut fires whenever a segment holds more than B - n image entries, so a B
//   that is not a multiple of n is never exceeded either.
// - Redundancy is the plain mean similarity to every other retained image key
//   (window entries included, the condition excluded: LlamaGen's condition key is
//   the zero vector, whose cosine is undefined). R-KV's released code further
//   zeroes the similarities of the most recent highly-similar copies (a
//   threshold / "retain the last occurrence" step); it is not applied here: a
//   line-wise image cache has no exact repeats to protect, and the step has
//   parameters neither image paper gives.
// - Similarities are per KV head (keys belong to a KV head); query heads only
//   enter the importance, summed over each KV head's group.
// - The condition token(s) and the observation window are always kept; a budget
//   that cannot hold the window, the one-line buffer and one scored entry
//   (B < window + n + 1) is an error.
// - CFG: the decision is taken on the conditional row (cfg_decision=cond, default)
//   or on the sum of both rows' scores (cfg_decision=both), applied to both rows.
// - Adopting a larger cache (a policy change mid-run) evicts as many entries as
//   needed at the next line end; window queries not observed since the adoption
//   are left out of the importance.
// - Ties: the older entry is evicted first.
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/snapkv_policy.h"

namespace kvs {

class RkvPolicy : public CachePolicy {
 public:
  RkvPolicy(const PolicyContext& context, int64_t budget_tokens, double lambda, int64_t window, int64_t kernel,
            bool decide_on_both);
  std::string name() const override { return "rkv"; }
  int64_t budget_tokens() const override { return budget_; }
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  void after_token(KvStore& store, int64_t token_index) override;

 private:
  PolicyContext context_;
  int64_t budget_, kernel_;
  double lambda_;
  bool decide_on_both_;
  ObservationWindow window_;
};

// Mean cosine similarity of every slot's key to the other image keys of its segment,
// [rows, kv_heads, L] CPU float (0 where a segment has a single image entry).
// is_image: bool [rows, kv_heads, L] CPU.
at::Tensor key_redundancy(const KvStore& store, int64_t layer, const at::Tensor& is_image);

PolicyInfo rkv_policy_info();

}  // namespace kvs
