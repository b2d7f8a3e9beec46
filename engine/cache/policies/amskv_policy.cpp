#include "engine/cache/policies/amskv_policy.h"
#include "engine/cache/policies/calibration_provider.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/core/errors.h"

namespace kvs {

AmsKvPolicy::AmsKvPolicy(const PolicyContext& context, const AmsKvOptions& options)
    : context_(context), options_(options), keys_(context.n_layer) {
  const auto& t = context.unit_tokens;
  const auto scales = static_cast<int64_t>(t.size());
  if (scales < 2) throw InvalidArgumentError("policy amskv works on next-scale (VAR) models only");
  if (options.condensed_scales < 0 || options.condensed_scales >= scales - 1)
    throw InvalidArgumentError("policy amskv: cds " + std::to_string(options.condensed_scales) +
                               " condensed scales is impossible (0.." + std::to_string(scales - 2) + " for " +
                               std::to_string(scales) + " scales)");
  if (options.theta) {
    if (!std::isfinite(*options.theta)) throw InvalidArgumentError("policy amskv: theta must be a finite number");
    theta_ = *options.theta;
    theta_source_ = "theta=";
  } else if (const std::shared_ptr<const AmsKvCalibration> calibration =
                 options.allocation == AmsKvAllocation::Similarity && context.calibrations
                     ? context.calibrations->amskv_similarity()
                     : nullptr) {
    // A calibration made for another geometry would put theta anywhere: refuse it.
    calibration->check_matches(context);
    theta_ = calibration->theta.theta;
    theta_source_ = "calibration";
  } else {
    theta_source_ = "paper default";
  }
  for (int64_t s = 0; s < options.condensed_scales; ++s) cds_tokens_ += t[static_cast<size_t>(s)];
  const int64_t last = t.back(), penultimate = t[t.size() - 2];
  c_max_ = options.c_max > 0 ? options.c_max : last + penultimate + cds_tokens_;
  c_min_ = options.c_min > 0 ? options.c_min : penultimate + cds_tokens_;
  if (options.c_max < 0 || options.c_min < 0)
    throw InvalidArgumentError("policy amskv: c_max and c_min are token counts (0 = the paper's default)");
  if (c_min_ > c_max_)
    throw InvalidArgumentError("policy amskv: c_min " + std::to_string(c_min_) + " exceeds c_max " +
                               std::to_string(c_max_));
  if (c_min_ <= cds_tokens_)
    throw InvalidArgumentError("policy amskv: c_min " + std::to_string(c_min_) +
                               " tokens is impossible: it must exceed the " + std::to_string(cds_tokens_) +
                               " tokens of the condensed scales");
  if (options.order == AmsKvOrder::EvictFirst) {
    // Rolled before a scale attends, CLRU keeps C_bgt - C_cds recent tokens: a
    // scale cached under a budget must fit in them whole, or it would lose some of
    // its own entries before they attend (the rule of cache_policy.h).
    for (const auto& [name, b] : {std::pair<const char*, int64_t>{"c_min", c_min_}, {"c_max", c_max_}}) {
      for (int64_t s = options.condensed_scales; s < scales; ++s) {
        const int64_t t_s = t[static_cast<size_t>(s)];
        if (t_s <= b && t_s > b - cds_tokens_)
          throw InvalidArgumentError("policy amskv: " + std::string(name) + " " + std::to_string(b) +
                                     " tokens is impossible with order=evict_first: rolled before scale " +
                                     std::to_string(s) + " attends, the cache would keep " +
                                     std::to_string(b - cds_tokens_) +
                                     " recent tokens, fewer than the "
                                     "scale's own " +
                                     std::to_string(t_s) + ", so it would lose some of them before they attend; use " +
                                     std::string(name) + " >= " + std::to_string(t_s + cds_tokens_) + " (or below " +
                                     std::to_string(t_s) + ", which never caches the scale), or order=attend_first");
      }
    }
  }
  if (options.demanding_layers < 0 || options.demanding_layers > context.n_layer)
    throw InvalidArgumentError("policy amskv: demanding_layers " + std::to_string(options.demanding_layers) +
                               " is impossible (0.." + std::to_string(context.n_layer) + " for " +
                               std::to_string(context.n_layer) + " layers; 0 = a sixth of them)");
  images_ = context.batch;
  const auto n = static_cast<size_t>(context.n_layer * images_);
  budget_.assign(n, c_min_);
  if (options.allocation == AmsKvAllocation::Uniform) {
    // S1: the centres of `count` equal bands of depth hold C_max from the start.
    const int64_t layers = context.n_layer;
    const int64_t count = options.demanding_layers > 0 ? options.demanding_layers
                                                       : std::llround(static_cast<double>(layers) / 6.0);
    for (int64_t k = 0; k < count; ++k) {
      const auto layer = static_cast<int64_t>(std::floor((static_cast<double>(k) + 0.5) * layers / count));
      uniform_layers_.push_back(layer);
      for (int64_t image = 0; image < images_; ++image) budget_[at(layer, image)] = c_max_;
    }
  }
  similarity_.assign(n, std::numeric_limits<double>::quiet_NaN());
  drop_pending_.assign(n, 0);
}

int64_t AmsKvPolicy::max_entries() const {
  return std::min(context_.image_tokens(), c_max_ + context_.unit_tokens.back());
}

int64_t AmsKvPolicy::initial_entries() const {
  return std::min(context_.image_tokens(), c_min_ + context_.unit_tokens.back());
}

void AmsKvPolicy::after_token(KvStore&, int64_t) {
  throw InvalidArgumentError("policy amskv works on next-scale (VAR) models only");
}

int64_t AmsKvPolicy::layer_budget(int64_t layer, int64_t image) const { return budget_.at(at(layer, image)); }

double AmsKvPolicy::last_similarity(int64_t layer, int64_t image) const { return similarity_.at(at(layer, image)); }

void AmsKvPolicy::observe_unit_keys(int64_t layer, int64_t unit, const at::Tensor& keys) {
  const std::vector<double> s = keys_.observe(layer, unit, keys, images_);
  for (size_t r = 0; r < s.size(); ++r) similarity_[at(layer, static_cast<int64_t>(r))] = s[r];
}

at::Tensor AmsKvPolicy::roll(const KvStore& store, int64_t layer, int64_t unit) {
  const int64_t rows = decision_rows(store, context_);
  const int64_t t_i = context_.unit_tokens.at(static_cast<size_t>(unit));
  ImageSlots slots = image_slots(store, layer, 0);
  at::Tensor keep = at::ones({rows, store.kv_heads(), slots.length}, at::TensorOptions().dtype(at::kBool));
  at::Tensor units;  // the unit of every slot, for the rows that drop this scale
  bool evict = false;
  for (int64_t r = 0; r < rows; ++r) {
    const size_t i = at(layer, r);
    drop_pending_[i] = 0;
    // Algorithm 1, lines 5-16, for this layer and image. The scale is already in
    // the store; C_{i-1} is what was there before it.
    bool drop = t_i > c_max_;                                                            // lines 5-6: never cached
    const int64_t cached = store.max_length(layer) > 0 ? store.length(layer, r, 0) : 0;  // |C_i| (heads are equal)
    if (!drop && cached > budget_[i]) {
      const double s = similarity_[i];
      // Lines 10-11 (S2 only: S1's budgets are fixed from the start).
      const bool by_similarity = options_.allocation == AmsKvAllocation::Similarity;
      if (by_similarity && budget_[i] == c_min_ && !std::isnan(s) && s < theta_) budget_[i] = c_max_;
      drop = t_i > budget_[i];  // lines 13-14: C_i = C_{i-1}
      if (!drop) {
        // CLRU (Algorithm 2): the condensed tokens and the C_bgt - cds most recent ones.
        const at::Tensor rank = slots.rank[r], count = slots.count[r].unsqueeze(-1);
        keep[r] = ~slots.is_image[r] | (rank < cds_tokens_) | (rank >= count - (budget_[i] - cds_tokens_));
        evict = true;
      }
    }
    if (!drop) continue;
    if (options_.order == AmsKvOrder::EvictFirst) {
      drop_pending_[i] = 1;  // the scale's own entries stay until it has attended
      continue;
    }
    if (!units.defined()) units = unit_of_slots(store, layer, context_);
    keep[r] = units[r] != unit;
    evict = true;
  }
  return evict ? keep : at::Tensor();
}

void AmsKvPolicy::before_unit_attention(KvStore& store, int64_t layer, int64_t unit) {
  if (options_.order != AmsKvOrder::EvictFirst) return;
  // The old order: the cache rolls before the scale attends, so in a C_min layer
  // the scale sees only the condensed scales and the newest tokens.
  at::Tensor keep = roll(store, layer, unit);
  if (keep.defined()) apply_keep(store, layer, keep, context_);
}

void AmsKvPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t unit) {
  if (options_.order == AmsKvOrder::AttendFirst) {
    // The scale has attended to C_{i-1} and itself; now the layer's cache becomes C_i.
    at::Tensor keep = roll(store, layer, unit);
    if (keep.defined()) apply_keep(store, layer, keep, context_);
    return;
  }
  const int64_t rows = decision_rows(store, context_);
  bool any = false;
  for (int64_t r = 0; r < rows; ++r) any = any || drop_pending_[at(layer, r)] != 0;
  if (!any) return;
  const at::Tensor units = unit_of_slots(store, layer, context_).narrow(0, 0, rows);
  at::Tensor keep = at::ones_like(units, at::TensorOptions().dtype(at::kBool));
  for (int64_t r = 0; r < rows; ++r)
    if (drop_pending_[at(layer, r)] != 0) keep[r] = units[r] != unit;
  apply_keep(store, layer, keep, context_);
  for (int64_t r = 0; r < rows; ++r) drop_pending_[at(layer, r)] = 0;
}

std::vector<int64_t> amskv_decision_scales(const PolicyContext& context, const AmsKvOptions& options) {
  AmsKvOptions budgets = options;
  budgets.allocation = AmsKvAllocation::Similarity;
  const AmsKvPolicy policy(context, budgets);  // resolves and checks the budgets
  std::vector<int64_t> scales;
  int64_t cached = 0;  // a layer at C_min that is never promoted
  for (size_t i = 0; i < context.unit_tokens.size(); ++i) {
    const int64_t t = context.unit_tokens[i];
    if (t > policy.c_max()) continue;  // lines 5-6: never cached, no test
    if (cached + t <= policy.c_min()) {
      cached += t;
      continue;
    }
    if (i > 0) scales.push_back(static_cast<int64_t>(i));
    // Not promoted: a scale larger than C_min is dropped (lines 13-14), else CLRU
    // rolls the cache back to C_min.
    if (t <= policy.c_min()) cached = policy.c_min();
  }
  return scales;
}

namespace {

AmsKvOptions amskv_options(const PolicyParams& p) {
  AmsKvOptions o;
  o.condensed_scales = p.integer("cds");
  o.c_max = p.integer("c_max");
  o.c_min = p.integer("c_min");
  // Only a theta the user wrote overrides the model's calibrated one.
  if (p.explicitly_set("theta")) o.theta = p.real("theta");
  o.allocation = p.text("allocation") == "uniform" ? AmsKvAllocation::Uniform : AmsKvAllocation::Similarity;
  o.demanding_layers = p.integer("demanding_layers");
  o.order = p.text("order") == "evict_first" ? AmsKvOrder::EvictFirst : AmsKvOrder::AttendFirst;
  return o;
}

}  // namespace

PolicyInfo amskv_policy_info() {
  std::vector<PolicyParamSpec> params = {
      integer_param("cds", "2", 0, 1e6, "condensed scales: the first scales every layer always keeps"),
      integer_param("c_max", "0", 0, 1e6,
                    "budget of cache-demanding layers in tokens (0 = last two scales + condensed)"),
      integer_param("c_min", "0", 0, 1e6,
                    "budget every layer starts with in tokens (0 = penultimate scale + condensed)"),
      // A similarity: negative thresholds (the default among them) must fit the range.
      real_param("theta", "-0.008", -1, 1,
                 "a layer becomes cache-demanding when its inter-scale key similarity falls below this (unset: the "
                 "model's calibrated theta, amskv_calibration.json from 'kvstudio-cli calibrate --policy amskv', "
                 "else -0.008, VAR-d30's)"),
      choice_param("allocation", "similarity", {"similarity", "uniform"},
                   "which layers get c_max: those whose key similarity falls below theta (S2, Algorithm 1), or a "
                   "fixed number spread uniformly over the depth (S1, Table 2)"),
      integer_param("demanding_layers", "0", 0, 1024,
                    "allocation=uniform: layers given c_max, spread evenly over the depth (0 = a sixth of the "
                    "layers, as in Table 2)"),
      choice_param("order", "attend_first", {"attend_first", "evict_first"},
                   "attend_first: a scale attends to the whole previous cache and itself, then the layer rolls to "
                   "its budget; evict_first: the layer rolls before the scale attends (the same peak memory, but "
                   "the scale then loses its local scales)"),
  };
  return {{"amskv",
           "AMS-KV: condensed scales + rolling local scales; low key-similarity layers get a larger budget",
           "Xu et al. 2026 (AMS-KV, AAAI-26), Algorithms 1-2; allocation=uniform: Table 2 (S1)",
           params,
           {"scale"}},
          [](const PolicyParams& p, const PolicyContext& c) -> std::unique_ptr<CachePolicy> {
            return std::make_unique<AmsKvPolicy>(c, amskv_options(p));
          }};
}

}  // namespace kvs
