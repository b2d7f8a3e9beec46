#pragma once
// `scale_groups` — the probe behind AMS-KV's Table 1 (Xu et al., "AMS-KV:
// Adaptive KV Caching in Multi-Scale Visual Autoregressive Transformers",
// AAAI-26, "Not All Scales Are Equally Important"): the full cache of a
// next-scale model without one group of scales. Seen from the scale being
// generated, the paper's groups are the condensed scales (the first two), the
// local scales (the most recent ones before it) and the intermediate scales
// (the rest); removing the intermediate ones barely hurts, removing the condensed
// or the local ones does.
//
// - remove=intermediate: before scale i attends, every layer evicts the scales s
//   with cds <= s < i - local; what stays is the condensed scales, the `local`
//   newest scales and scale i itself.
// - remove=condensed: before scale i attends, every layer evicts the scales s < cds
//   (s < i); the first cds scales attend only to themselves.
// - remove=local: before scale i attends, every layer sets aside (KvStore::
//   set_aside) the scales s with max(cds, i - local) <= s < i and brings them back
//   once scale i has attended (after_unit_layer): a scale is hidden while it is
//   local and seen again once it has become intermediate. Nothing is evicted and
//   no memory is saved: the row measures what the local scales contribute.
// The paper does not say how many scales are local; local= sets it (default 2).
// Choices where the paper is silent: docs/policies.md#scale_groups
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

enum class ScaleGroup { Condensed, Intermediate, Local };

class ScaleGroupsPolicy : public CachePolicy {
 public:
  ScaleGroupsPolicy(const PolicyContext& context, ScaleGroup removed, int64_t condensed_scales, int64_t local_scales);
  std::string name() const override { return "scale_groups"; }
  // The most image entries a segment holds once a scale's removal is done.
  int64_t budget_tokens() const override { return budget_; }
  // The most it holds between a scale's append and the removal before it attends.
  int64_t max_entries() const override { return peak_; }
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  void before_unit_attention(KvStore& store, int64_t layer, int64_t unit) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

  // Whether scale `scale` is out of the view of scale `unit`'s queries: evicted
  // by then (intermediate, condensed) or set aside while `unit` attends (local).
  bool removed(int64_t scale, int64_t unit) const;

 private:
  PolicyContext context_;
  ScaleGroup group_;
  int64_t cds_, local_;
  int64_t budget_ = 0, peak_ = 0;
};

PolicyInfo scale_groups_policy_info();

}  // namespace kvs
