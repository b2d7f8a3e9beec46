#pragma once
// `linear` — LineAR (Qin et al., "Autoregressive Image Generation Needs Only a Few
// Lines of Cached Tokens", §3.3), per layer, per (row, KV head): a budget of
// B = rho x N image tokens in whole lines; once a segment holds B, every line end
// keeps the N_init anchors and the r recent lines and evicts the n mid tokens with
// the lowest inter-line saliency (Eq. 8-9, the finished line's queries, softmax
// over the mid keys), leaving B - n: a one-line buffer (Eq. 6-7).
// Choices where the paper is silent: docs/policies.md#linear
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class LinearPolicy : public CachePolicy {
 public:
  LinearPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t n_init, int64_t recent_lines,
               bool decide_on_both);
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
