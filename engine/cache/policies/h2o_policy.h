#pragma once
// `h2o` — H2O (Zhang et al., "H2O: Heavy-Hitter Oracle for Efficient Generative
// Inference of Large Language Models", 2023, §3-4), as the LineAR (§4.2) and
// HeadKV (§5.2) papers run it on images: per layer, per (row, KV head), keep a
// window of the most recent tokens plus the "heavy hitters", the entries with the
// largest ACCUMULATED attention (the sum, over every decoding step since the entry
// entered the cache, of the attention it received). Evicts greedily after every
// token (H2O's per-step eviction), so a segment never holds more than B image
// entries after after_token.
//
// Choices where the papers are silent:
// - Budget split: recent = floor(recent x B) most recent image tokens (default
//   recent = 0.5: H2O's equal heavy-hitter / recent budgets), heavy = B - recent.
//   A budget that leaves no heavy-hitter slot (B <= recent tokens) is an error.
// - Accumulation: the attention mass each entry receives at every decode step (the
//   step's query heads summed over each KV head's group, i.e. KvAttention::key_mass),
//   accumulated per sequence POSITION (slots move after evictions). Masses of the
//   prefill (the condition attending to itself) are not included: the condition is
//   never a candidate. An entry's own step counts (its query attends to itself).
// - The condition token(s) are always kept and not counted in B.
// - Per step, at most one entry is evicted in steady state (B + 1 -> B): the
//   candidate (outside the recent window) with the smallest accumulated attention;
//   the store therefore holds at most B + 1 image entries between two after_token
//   calls (max_entries).
// - CFG: the decision is taken on the conditional row (cfg_decision=cond, default)
//   or on the sum of both rows' accumulated attention (cfg_decision=both) and
//   applied to both, so a CFG pair always holds the same positions. When CFG is
//   dropped, the unconditional rows' sums are discarded.
// - Adopting a larger cache (a policy change mid-run): the accumulated attention
//   starts at the adoption (earlier steps were not observed), and the first
//   after_token evicts as many entries as needed to get back to B.
// - Ties: the older entry is evicted first.
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class H2OPolicy : public CachePolicy {
 public:
  H2OPolicy(const PolicyContext& context, int64_t budget_tokens, double recent_fraction, bool decide_on_both);
  std::string name() const override { return "h2o"; }
  int64_t budget_tokens() const override { return budget_; }
  int64_t max_entries() const override { return budget_ + 1; }
  bool wants_key_mass() const override { return true; }
  void observe_attention(int64_t layer, int64_t token_index, const at::Tensor& key_mass, const at::Tensor& positions) override;
  void after_token(KvStore& store, int64_t token_index) override;
  int64_t recent_tokens() const { return recent_; }

 private:
  PolicyContext context_;
  int64_t budget_, recent_;
  bool decide_on_both_;
  std::vector<at::Tensor> accumulated_;  // per layer, CPU double [rows, kv_heads, condition + image tokens]
};

PolicyInfo h2o_policy_info();

}  // namespace kvs
