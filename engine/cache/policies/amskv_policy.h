#pragma once
// `amskv` — AMS-KV (Xu, Wang, Wang, Li, "AMS-KV: Adaptive KV Caching in Multi-Scale
// Visual Autoregressive Transformers", AAAI-26, Algorithms 1-2), for the
// next-scale family (VAR). Per layer: the condensed scales (the first cds) are
// always kept and later scales roll through the cache first in, first out (CLRU)
// within the layer's budget, which starts at C_min and is raised once to C_max when
// a scale overflows C_min and the layer's inter-scale key similarity is below
// theta. The similarity is S = -mean((k_i - resize(k_{i-1}))^2) over all heads,
// tokens and dimensions of the image's conditional row (keys as cached, bilinear
// resize): the negated mean squared difference, not the paper's -||.||_2 (Eq. 3),
// so that the paper's theta range applies.
//
// allocation=uniform is the paper's S1 ("Not All Layers are Cache-Demanding",
// Table 2): as many layers get C_max as in its S2, but spread uniformly over the
// depth instead of chosen by similarity. The paper's experiment gives C_max to
// one sixth of the layers; the choices made here: m = demanding_layers layers
// (0: round(layers / 6)), the centres of m equal bands of depth
// (floor((k + 1/2) x layers / m)), hold C_max from the first scale and every other
// layer C_min throughout (no similarity is computed); the rest of Algorithm 1 (a
// scale larger than the budget is not cached, CLRU) is unchanged.
// allocation=similarity (S2, Algorithm 1) is the default.
// Choices where the paper is silent: docs/policies.md#amskv
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

// Which layers get C_max: promoted by inter-scale similarity (S2, Algorithm 1), or
// a fixed number of layers spread uniformly over the depth (S1, Table 2).
enum class AmsKvAllocation { Similarity, Uniform };

struct AmsKvOptions {
  int64_t condensed_scales = 2;  // C_cds in scales
  int64_t c_max = 0, c_min = 0;  // tokens; 0 = the paper's default from the scale schedule
  double theta = -0.008;
  AmsKvAllocation allocation = AmsKvAllocation::Similarity;
  int64_t demanding_layers = 0;  // Uniform: layers given C_max; 0 = round(layers / 6), Table 2's share
};

class AmsKvPolicy : public CachePolicy {
 public:
  AmsKvPolicy(const PolicyContext& context, const AmsKvOptions& options);
  std::string name() const override { return "amskv"; }
  int64_t budget_tokens() const override { return c_max_; }
  int64_t max_entries() const override;
  int64_t initial_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  bool wants_unit_keys() const override { return options_.allocation == AmsKvAllocation::Similarity; }
  void observe_unit_keys(int64_t layer, int64_t unit, const at::Tensor& keys) override;
  void before_unit_attention(KvStore& store, int64_t layer, int64_t unit) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

  int64_t c_max() const { return c_max_; }
  int64_t c_min() const { return c_min_; }
  int64_t condensed_tokens() const { return cds_tokens_; }
  // Per layer and image: the current budget C_bgt and the last similarity S
  // (NaN before the second scale).
  int64_t layer_budget(int64_t layer, int64_t image) const;
  double last_similarity(int64_t layer, int64_t image) const;
  bool cache_demanding(int64_t layer, int64_t image) const { return layer_budget(layer, image) == c_max_; }
  // allocation=uniform: the layers given C_max, ascending (empty otherwise).
  const std::vector<int64_t>& uniform_demanding_layers() const { return uniform_layers_; }

 private:
  size_t at(int64_t layer, int64_t image) const { return static_cast<size_t>(layer * images_ + image); }

  PolicyContext context_;
  AmsKvOptions options_;
  int64_t c_max_ = 0, c_min_ = 0, cds_tokens_ = 0, images_ = 1;
  std::vector<int64_t> budget_;        // [layer x image]
  std::vector<double> similarity_;     // [layer x image]
  std::vector<uint8_t> drop_pending_;  // [layer x image]: the current scale is not cached
  std::vector<at::Tensor> prev_keys_;  // per layer: the previous scale's keys of the decision rows
  std::vector<int64_t> uniform_layers_;
};

PolicyInfo amskv_policy_info();

}  // namespace kvs
