#pragma once
// `amskv` — AMS-KV (Xu, Wang, Wang, Li, "AMS-KV: Adaptive KV Caching in Multi-Scale
// Visual Autoregressive Transformers", AAAI-26), for the next-scale family (VAR).
// Per layer: the condensed scales (the first C_cds scales) are always kept; later
// scales roll through the cache first in, first out (CLRU, Algorithm 2) within the
// layer's budget C_bgt. Every layer starts cache-efficient (C_bgt = C_min) and is
// promoted once to cache-demanding (C_bgt = C_max) when an appended scale overflows
// C_min and the inter-scale key similarity S(k_i, resize(k_{i-1})) = -||k_i -
// k̂_{i-1}|| (Eq. 3) is below theta (Algorithm 1, exactly: a scale larger than
// C_max, or larger than the budget after the promotion check, is not cached).
// Defaults as in §Experimental Setup: C_max = the last two scales + the condensed
// scales, C_min = the penultimate scale + the condensed scales, C_cds = 2 scales.
//
// Choices where the paper is silent:
// - When: Algorithm 1 is the cache update at append time, so the rolling happens
//   after scale i's entries are appended and before its queries attend
//   (before_unit_attention): the scale sees the rolled cache C_i. A scale that is
//   not cached still attends to C_{i-1} and to itself (its self-attention) and is
//   dropped right after its layer ran (after_unit_layer).
// - S's scale: the paper's threshold range (theta = -0.007 .. -0.01, default here
//   -0.008, its best FID) only makes sense for a normalised norm, so S is the mean
//   over elements of the squared difference, negated (keys as cached: VAR's
//   L2-normalised keys, all heads). The resize is bilinear (align_corners=false) of
//   the previous scale's key map to the current scale's side. Scale 0 has no
//   predecessor: it never promotes.
// - Granularity: decisions are per layer and per image (conditional row; its CFG
//   partner mirrors it), so an image gets the same cache alone or in a batch. The
//   similarity of an image is measured on its conditional row.
// - C_cds counts whole scales; CLRU keeps the first C_cds-scales' tokens and the
//   C_bgt - cds most recent tokens (token granularity, Algorithm 2's slicing).
// - budget_tokens() is C_max (no segment holds more after any layer); a scale's
//   entries are in the store while it attends, so max_entries() adds the largest
//   scale.
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

struct AmsKvOptions {
  int64_t condensed_scales = 2;  // C_cds in scales
  int64_t c_max = 0, c_min = 0;  // tokens; 0 = the paper's default from the scale schedule
  double theta = -0.008;
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
  bool wants_unit_keys() const override { return true; }
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

 private:
  size_t at(int64_t layer, int64_t image) const { return static_cast<size_t>(layer * images_ + image); }

  PolicyContext context_;
  AmsKvOptions options_;
  int64_t c_max_ = 0, c_min_ = 0, cds_tokens_ = 0, images_ = 1;
  std::vector<int64_t> budget_;         // [layer x image]
  std::vector<double> similarity_;      // [layer x image]
  std::vector<uint8_t> drop_pending_;   // [layer x image]: the current scale is not cached
  std::vector<at::Tensor> prev_keys_;   // per layer: the previous scale's keys of the decision rows
};

PolicyInfo amskv_policy_info();

}  // namespace kvs
