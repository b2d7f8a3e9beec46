#pragma once
// Measures ScaleKV's Attention Selectivity Index (layer_selectivity_profile.h) on
// a full-cache generation of a next-scale model: a CachePolicy that never evicts
// and, in every layer of every scale, recomputes the scale's attention
// alpha = softmax(q K^T / sqrt(d)) over the whole cache from the queries the
// model hands it, before the scale attends. Per query it takes the mass on the
// current scale C_k and the sum of its K' largest probabilities on the history
// P_{k-1}; both are averaged over the queries, the heads and every calibration
// image (the conditional rows only: the unconditional half of a CFG pair is not a
// calibration prompt). The VAR family runs it (scalekv_calibration.h).
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/layer_selectivity_profile.h"

namespace kvs {

class AttentionSelectivityMeter : public CachePolicy {
 public:
  AttentionSelectivityMeter(const PolicyContext& context, int64_t top_k);
  std::string name() const override { return "full"; }
  int64_t budget_tokens() const override { return context_.image_tokens(); }
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t unit, const at::Tensor& queries) override;
  void before_unit_attention(KvStore& store, int64_t layer, int64_t unit) override;

  // The means so far (images measured: every generation this meter watched).
  LayerSelectivityProfile profile(const std::vector<int64_t>& classes) const;

 private:
  PolicyContext context_;
  int64_t top_k_;
  std::vector<at::Tensor> queries_;            // per layer: the current scale's queries
  std::vector<double> current_sum_, top_sum_;  // [layer][scale]: summed over queries, heads, images
  std::vector<double> weight_;                 // [layer][scale]: how many (query, head, image) terms
  int64_t images_ = 0;
};

}  // namespace kvs
