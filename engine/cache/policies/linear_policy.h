#pragma once
// `linear` — LineAR (Qin et al., "Autoregressive Image Generation Needs Only a Few
// Lines of Cached Tokens", §3.3), per layer, per (row, KV head):
//   - budget B = rho x N visual tokens, rounded down to whole lines (n | B);
//   - no compression while the cache holds fewer than B visual entries (l/n < rho);
//   - then, at the end of every line (after the step whose input is the line's
//     last token), partition the visual cache into the initial anchors P_init (the
//     first N_init visual tokens), the recent r lines P_rec, and the mid region;
//     evict from the mid region the n tokens with the lowest inter-line saliency
//     S_j = mean over the finished line's n queries of softmax(q K_mid^T / sqrt(d))_j
//     (Eq. 8-9), leaving |P| = B - n: a one-line buffer for the next line (Eq. 6-7).
//
// Choices where the paper is silent (its supplementary material with the per-model
// N_init and r is not available):
// - N_init = 4 and r = 1 by default (both parameters); a budget that cannot hold
//   N_init + r lines + the one-line buffer + one line to select from is an error.
// - The condition token is kept and not counted in B (it is LlamaGen's permanent sink).
// - Scores use the post-RoPE queries of the line just finished; with grouped-query
//   attention the mean also runs over the query heads sharing a KV head.
// - The softmax runs over the mid-region keys only (Eq. 8 as written).
// - CFG: the decision is taken on the conditional row (cfg_decision=cond, default)
//   or on the sum of both rows' scores (cfg_decision=both) and applied to both, so a
//   CFG pair always holds the same positions.
// - Adopting a larger cache (a policy change mid-run) evicts as many mid tokens as
//   needed at the next line end to get back to B - n.
// - Ties: the older token is evicted first.
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class LinearPolicy : public CachePolicy {
 public:
  LinearPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t n_init, int64_t recent_lines, bool decide_on_both);
  std::string name() const override { return "linear"; }
  int64_t budget_tokens() const override { return budget_; }
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  void after_token(KvStore& store, int64_t token_index) override;
  // As the last line end partitioned the cache: "middle" (the candidates it
  // evicts from once the cache holds B), "recent" (the r lines before that line
  // end), "anchors" (the first N_init tokens), and "buffer" (the entries of the
  // line under way since).
  std::vector<CacheRegion> regions(int64_t positions) const override;

 private:
  PolicyContext context_;
  int64_t budget_, n_init_, recent_lines_;
  bool decide_on_both_;
  std::vector<at::Tensor> line_queries_;  // per layer [rows, n_head, n, head_dim]
};

PolicyInfo linear_policy_info();

}  // namespace kvs
