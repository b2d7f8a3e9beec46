#pragma once
// `h2o` — H2O (Zhang et al., "H2O: Heavy-Hitter Oracle for Efficient Generative
// Inference of Large Language Models", 2023, §3-4), as the LineAR (§4.2) and
// HeadKV (§5.2) papers run it on images: per layer, per (row, KV head), a recent
// window plus the heavy hitters, the entries with the largest attention
// accumulated over every step since they entered the cache. Evicts after every
// token, so a segment holds at most B image entries after after_token.
// Next-scale models: a step is a scale (every query of the scale adds its
// attention, summed over the scale's queries), the recent window is the newest
// tokens (the current scale first), and the cut to B runs after every layer of
// every scale (after_unit_layer), once that layer's queries have attended; a
// layer holds B plus the new scale until then.
// Choices where the paper is silent: docs/policies.md#h2o
#include "engine/cache/policies/attention_accumulator.h"
#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class H2OPolicy : public CachePolicy {
 public:
  H2OPolicy(const PolicyContext& context, int64_t budget_tokens, double recent_fraction, bool decide_on_both);
  std::string name() const override { return "h2o"; }
  int64_t budget_tokens() const override { return budget_; }
  int64_t max_entries() const override;
  bool wants_key_mass() const override { return true; }
  void observe_attention(int64_t layer, int64_t token_index, const at::Tensor& key_mass,
                         const at::Tensor& positions) override;
  void after_token(KvStore& store, int64_t token_index) override;
  int64_t recent_tokens() const { return recent_; }

  bool supports_units() const override { return !context_.unit_tokens.empty(); }
  void observe_unit_attention(int64_t layer, int64_t unit, const at::Tensor& key_mass,
                              const at::Tensor& positions) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

 private:
  // Cuts every segment of `layer` to B: the recent window stays, the candidates
  // with the least accumulated attention go.
  // The keep mask of `layer` (undefined: within the budget), on the scores' device.
  at::Tensor evict_layer(const KvStore& store, int64_t layer);

  PolicyContext context_;
  int64_t budget_, recent_;
  bool decide_on_both_;
  AttentionAccumulator accumulated_;
};

PolicyInfo h2o_policy_info();

}  // namespace kvs
