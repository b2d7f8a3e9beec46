#pragma once
// `linear` — LineAR (Qin et al., "Autoregressive Image Generation Needs Only a Few
// Lines of Cached Tokens", §3.3), per layer, per (row, KV head): a budget of
// B = rho x N image tokens in whole lines; once a segment holds B, every line end
// keeps the N_init anchors and the r recent lines and evicts the n mid tokens with
// the lowest inter-line saliency (Eq. 8-9, the finished line's queries, softmax
// over the mid keys), leaving B - n: a one-line buffer (Eq. 6-7).
//
// guidance=attn_acc is the ablation of §4.4 (Table 6, "w. AttAcc"): the same
// pipeline, but the mid tokens are ranked by the attention they accumulated over
// every decode step since they entered the cache (H2O's score). The paper gives
// no more than its name; the choices made here: the accumulated mass is the
// model's own attention at each step (softmax over the whole retained cache, not
// the mid region only), summed over the query heads of each KV head, per sequence
// position; the condition's prefill is not observed; a policy adopted mid-run
// starts accumulating at its first step (unobserved entries score 0, the older
// goes first); cfg_decision applies as for the default.
// Lines on Lumina-mGPT: one image row with its end-of-line token (n = W + 1; the
// paper's N = 2352 = 48 x 49 and B = 294 = 6 x 49 at rho = 1/8 count them so):
// the end-of-line entries are anchors, mid and recent tokens like image tokens.
// Choices where the paper is silent: docs/policies.md#linear
#include <memory>
#include <vector>

#include "engine/cache/policies/attention_accumulator.h"
#include "engine/cache/policies/policy_registry.h"

namespace kvs {

// How the mid tokens are ranked at a line end.
enum class LineGuidance {
  InterLine,  // the finished line's queries (Eq. 8-9): the paper's method
  AttnAcc,    // attention accumulated since each token entered the cache (Table 6)
};

class LinearPolicy : public CachePolicy {
 public:
  LinearPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t n_init, int64_t recent_lines,
               bool decide_on_both, LineGuidance guidance = LineGuidance::InterLine);
  std::string name() const override { return "linear"; }
  int64_t budget_tokens() const override { return budget_; }
  bool wants_queries() const override { return guidance_ == LineGuidance::InterLine; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  bool wants_key_mass() const override { return guidance_ == LineGuidance::AttnAcc; }
  void observe_attention(int64_t layer, int64_t token_index, const at::Tensor& key_mass,
                         const at::Tensor& positions) override;
  void after_token(KvStore& store, int64_t token_index) override;
  // As the last line end partitioned the cache: "middle" (the candidates it
  // evicts from once the cache holds B), "recent" (the r lines before that line
  // end), "anchors" (the first N_init tokens), and "buffer" (the entries of the
  // line under way since).
  std::vector<CacheRegion> regions(int64_t positions) const override;

 private:
  // Eq. 8-9 over the mid slots of the decision rows (float [decide, kv, L]).
  at::Tensor inter_line_saliency(const KvStore& store, int64_t layer, const ImageSlots& s, const at::Tensor& mid,
                                 int64_t decide) const;

  PolicyContext context_;
  int64_t budget_, n_init_, recent_lines_;
  bool decide_on_both_;
  LineGuidance guidance_;
  std::vector<at::Tensor> line_queries_;               // InterLine: per layer [rows, n_head, n, head_dim]
  std::unique_ptr<AttentionAccumulator> accumulated_;  // AttnAcc only
};

PolicyInfo linear_policy_info();

}  // namespace kvs
