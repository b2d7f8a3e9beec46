#include "engine/cache/policies/h2o_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"

namespace kvs {

H2OPolicy::H2OPolicy(const PolicyContext& context, int64_t budget_tokens, double recent_fraction, bool decide_on_both)
    : context_(context),
      budget_(budget_tokens),
      recent_(0),
      decide_on_both_(decide_on_both),
      accumulated_(context.n_layer, context.condition_tokens + context.image_tokens()) {
  if (!(recent_fraction >= 0 && recent_fraction <= 1))
    throw InvalidArgumentError("policy h2o: recent " + std::to_string(recent_fraction) +
                               " is impossible (must be a fraction of the budget, 0 <= recent <= 1)");
  recent_ = static_cast<int64_t>(std::floor(recent_fraction * static_cast<double>(budget_) + 1e-9));
  if (budget_ <= recent_)
    throw InvalidArgumentError("policy h2o: budget " + std::to_string(budget_) +
                               " tokens is impossible: it must exceed the " + std::to_string(recent_) +
                               " recent-window tokens to leave room for heavy hitters: at least " +
                               std::to_string(recent_ + 1) + " tokens (lower `recent`)");
}

void H2OPolicy::observe_attention(int64_t layer, int64_t, const at::Tensor& key_mass, const at::Tensor& positions) {
  accumulated_.add(layer, key_mass, positions);
}

int64_t H2OPolicy::max_entries() const {
  // Raster: the new token arrives before after_token evicts; VAR: a whole scale
  // arrives before after_unit_layer cuts.
  if (context_.unit_tokens.empty()) return budget_ + 1;
  return std::min(context_.image_tokens(), budget_ + context_.unit_tokens.back());
}

void H2OPolicy::observe_unit_attention(int64_t layer, int64_t, const at::Tensor& key_mass,
                                       const at::Tensor& positions) {
  accumulated_.add(layer, key_mass, positions);
}

void H2OPolicy::after_token(KvStore& store, int64_t) {
  // Every layer decides first, then all evict together (one wait per step on a GPU).
  std::vector<at::Tensor> keeps(static_cast<size_t>(store.n_layer()));
  for (int64_t layer = 0; layer < store.n_layer(); ++layer)
    keeps[static_cast<size_t>(layer)] = evict_layer(store, layer);
  apply_keeps(store, keeps, context_);
}

void H2OPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t) {
  const at::Tensor keep = evict_layer(store, layer);
  if (keep.defined()) apply_keep(store, layer, keep, context_);
}

at::Tensor H2OPolicy::evict_layer(const KvStore& store, int64_t layer) {
  ImageSlots s = image_slots(store, layer, context_.condition_tokens);
  if (s.count.max().item<int64_t>() <= budget_) return at::Tensor();
  const int64_t rows = store.rows(), decide = decision_rows(store, context_);
  at::Tensor count = s.count.narrow(0, 0, decide);
  at::Tensor candidates = s.is_image.narrow(0, 0, decide) &
                          (s.rank.narrow(0, 0, decide) < (count - recent_).unsqueeze(-1));
  at::Tensor score = accumulated_.slot_scores(layer, s.positions, rows, decide, decide_on_both_);
  at::Tensor evict = at::clamp_min(count - budget_, 0);
  return keep_all_but_lowest(score, candidates, evict);
}

PolicyInfo h2o_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back(fraction_param("recent", "1/2", 0, 1,
                                  "fraction of the budget kept as a recent window (the rest: heavy hitters)"));
  params.push_back(choice_param("cfg_decision", "cond", {"cond", "both"},
                                "CFG pairs: score on the conditional row, or on both rows"));
  return {{"h2o",
           "H2O: heavy hitters by accumulated attention + a recent window, evicting every token (every layer of "
           "every scale on VAR models)",
           "Zhang et al. 2023 (H2O) §3-4, baseline in LineAR §4.2 / HeadKV §5.2; over scales as in AMS-KV Table 5",
           params},
          [](const PolicyParams& p, const PolicyContext& c) {
            return std::make_unique<H2OPolicy>(c, resolve_budget_tokens(p, c, "h2o"), p.real("recent"),
                                               p.text("cfg_decision") == "both");
          }};
}

}  // namespace kvs
