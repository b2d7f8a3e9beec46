#include "engine/cache/policies/scale_groups_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"

namespace kvs {

ScaleGroupsPolicy::ScaleGroupsPolicy(const PolicyContext& context, ScaleGroup removed_group, int64_t condensed_scales,
                                     int64_t local_scales)
    : context_(context), group_(removed_group), cds_(condensed_scales), local_(local_scales) {
  const auto scales = static_cast<int64_t>(context.unit_tokens.size());
  if (scales < 2) throw InvalidArgumentError("policy scale_groups works on next-scale (VAR) models only");
  if (cds_ < 0 || cds_ >= scales)
    throw InvalidArgumentError("policy scale_groups: cds " + std::to_string(cds_) +
                               " condensed scales is impossible (0.." + std::to_string(scales - 1) + " for " +
                               std::to_string(scales) + " scales)");
  if (group_ == ScaleGroup::Condensed && cds_ == 0)
    throw InvalidArgumentError("policy scale_groups: remove=condensed needs cds >= 1 (cds=0 leaves nothing to remove)");
  if (local_ < 0) throw InvalidArgumentError("policy scale_groups: local must be >= 0");
  if (group_ == ScaleGroup::Local && local_ == 0)
    throw InvalidArgumentError("policy scale_groups: remove=local needs local >= 1 (local=0 hides nothing)");
  if (group_ == ScaleGroup::Local) {
    // Nothing is evicted: after every scale the store holds all scales so far
    // (the hidden ones included, set aside but counted).
    budget_ = peak_ = context.image_tokens();
    return;
  }
  // What a segment holds before and after the removal at each scale.
  int64_t held = 0;
  for (int64_t i = 0; i < scales; ++i) {
    peak_ = std::max(peak_, held + context.unit_tokens[static_cast<size_t>(i)]);
    held = 0;
    for (int64_t s = 0; s <= i; ++s)
      if (!removed(s, i)) held += context.unit_tokens[static_cast<size_t>(s)];
    budget_ = std::max(budget_, held);
  }
}

bool ScaleGroupsPolicy::removed(int64_t scale, int64_t unit) const {
  if (scale >= unit) return false;  // the scale attending and later ones
  if (group_ == ScaleGroup::Condensed) return scale < cds_;
  if (group_ == ScaleGroup::Local) return scale >= std::max(cds_, unit - local_);
  return scale >= cds_ && scale < unit - local_;
}

void ScaleGroupsPolicy::after_token(KvStore&, int64_t) {
  throw InvalidArgumentError("policy scale_groups works on next-scale (VAR) models only");
}

void ScaleGroupsPolicy::before_unit_attention(KvStore& store, int64_t layer, int64_t unit) {
  const at::Tensor units = unit_of_slots(store, layer, context_);  // [rows, kv, L], -1 for empty slots
  const auto scales = static_cast<int64_t>(context_.unit_tokens.size());
  std::vector<uint8_t> drop_table(static_cast<size_t>(scales) + 1, 0);  // index unit + 1
  bool any = false;
  for (int64_t s = 0; s < scales; ++s) {
    drop_table[static_cast<size_t>(s + 1)] = removed(s, unit) ? 1 : 0;
    any = any || removed(s, unit);
  }
  if (!any) return;
  const at::Tensor lookup =
      at::from_blob(drop_table.data(), {scales + 1}, at::TensorOptions().dtype(at::kByte)).to(at::kBool);
  if (group_ == ScaleGroup::Local) {
    // Every row and head holds the same scales (nothing is ever evicted).
    const at::Tensor hide = at::index_select(lookup, 0, (units + 1).reshape({-1})).reshape(units.sizes());
    store.set_aside(layer, hide);
    return;
  }
  const int64_t rows = decision_rows(store, context_);
  const at::Tensor decided = units.narrow(0, 0, rows);
  const at::Tensor drop = at::index_select(lookup, 0, (decided + 1).reshape({-1})).reshape(decided.sizes());
  if (!drop.any().item<bool>()) return;  // already gone at an earlier scale
  apply_keep(store, layer, ~drop, context_);
}

void ScaleGroupsPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t) {
  if (group_ == ScaleGroup::Local) store.bring_back(layer);
}

PolicyInfo scale_groups_policy_info() {
  std::vector<PolicyParamSpec> params = {
      choice_param("remove", "intermediate", {"intermediate", "condensed", "local"},
                   "the scales no later scale sees: the intermediate ones (between the condensed and the local "
                   "scales) or the condensed ones (the first cds); local: each scale is hidden while it is one of "
                   "the local scales and seen again later (nothing evicted)"),
      integer_param("cds", "2", 0, 1e6, "condensed scales: the first scales (AMS-KV: the first two)"),
      integer_param("local", "2", 0, 1e6,
                    "local scales: the newest non-condensed scales before the one being generated "
                    "(remove=intermediate keeps them, remove=local hides them)"),
  };
  return {{"scale_groups",
           "AMS-KV's scale-group probe: the full cache without its intermediate, local or condensed scales",
           "Xu et al. 2026 (AMS-KV, AAAI-26), Table 1 (Remove Intermediate, Remove Local, Remove Condensed)",
           params,
           {"scale"}},
          [](const PolicyParams& p, const PolicyContext& c) -> std::unique_ptr<CachePolicy> {
            const std::string removed = p.text("remove");
            const ScaleGroup group = removed == "condensed" ? ScaleGroup::Condensed
                                     : removed == "local"   ? ScaleGroup::Local
                                                            : ScaleGroup::Intermediate;
            return std::make_unique<ScaleGroupsPolicy>(c, group, p.integer("cds"), p.integer("local"));
          }};
}

}  // namespace kvs
