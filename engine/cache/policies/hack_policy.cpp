#include "engine/cache/policies/hack_policy.h"
#include "engine/cache/policies/calibration_provider.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <numeric>

#include "engine/cache/policies/head_variance_profile.h"
#include "engine/core/errors.h"

namespace kvs {

std::vector<int64_t> spatial_uniform_rank(int64_t side) {
  int64_t bits = 0;
  while ((int64_t{1} << bits) < side) ++bits;
  const int64_t tokens = side * side;
  std::vector<int64_t> code(static_cast<size_t>(tokens));
  for (int64_t r = 0; r < side; ++r)
    for (int64_t c = 0; c < side; ++c) {
      // Morton code: bit i of the column at 2i, bit i of the row at 2i + 1 ...
      int64_t morton = 0;
      for (int64_t i = 0; i < bits; ++i) morton |= (((c >> i) & 1) << (2 * i)) | (((r >> i) & 1) << (2 * i + 1));
      // ... read backwards, so the coarsest grid comes first.
      int64_t reversed = 0;
      for (int64_t i = 0; i < 2 * bits; ++i) reversed |= ((morton >> i) & 1) << (2 * bits - 1 - i);
      code[static_cast<size_t>(r * side + c)] = reversed;
    }
  std::vector<int64_t> order(static_cast<size_t>(tokens));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return code[static_cast<size_t>(a)] < code[static_cast<size_t>(b)]; });
  std::vector<int64_t> rank(static_cast<size_t>(tokens));
  for (int64_t i = 0; i < tokens; ++i) rank[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
  return rank;
}

HackPolicy::HackPolicy(const PolicyContext& context, const HackOptions& options)
    : context_(context), options_(options), key_mass_(static_cast<size_t>(context.n_layer)) {
  const auto scales = static_cast<int64_t>(context.unit_tokens.size());
  if (scales < 2) throw InvalidArgumentError("policy hack works on next-scale (VAR) models only");
  if (!(options.contextual >= 0 && options.contextual <= 1))
    throw InvalidArgumentError("policy hack: contextual " + std::to_string(options.contextual) +
                               " is impossible (a share of the heads, 0 <= contextual <= 1)");
  if (!(options.ratio > 0 && options.ratio <= 100))
    throw InvalidArgumentError("policy hack: ratio " + std::to_string(options.ratio) +
                               " is impossible (the contextual heads' budget over the structural heads', 0 < ratio "
                               "<= 100)");
  if (options.sinks < 0 || options.sinks > scales - 1)
    throw InvalidArgumentError("policy hack: sinks " + std::to_string(options.sinks) + " is impossible (0.." +
                               std::to_string(scales - 1) + " sink scales for " + std::to_string(scales) + " scales)");
  sink_tokens_ = context.unit_begin(options.sinks);
  const int64_t B = options.budget;
  if (B < sink_tokens_ + 1)
    throw InvalidArgumentError(
        "policy hack: budget " + std::to_string(B) + " tokens is impossible: every head keeps the " +
        std::to_string(options.sinks) + " sink scales (" + std::to_string(sink_tokens_) +
        " tokens) and at least one more token: at least " + std::to_string(sink_tokens_ + 1) + " tokens (rho >= " +
        std::to_string(static_cast<double>(sink_tokens_ + 1) / context.image_tokens()).substr(0, 6) + ")");
  for (int64_t k = 0; k < scales; ++k) {
    const auto side = static_cast<int64_t>(
        std::llround(std::sqrt(static_cast<double>(context.unit_tokens[static_cast<size_t>(k)]))));
    if (side * side != context.unit_tokens[static_cast<size_t>(k)])
      throw InvalidArgumentError("policy hack: scale " + std::to_string(k) + " of " +
                                 std::to_string(context.unit_tokens[static_cast<size_t>(k)]) +
                                 " tokens is not a square map");
    spatial_rank_.push_back(spatial_uniform_rank(side));
  }
  const std::shared_ptr<const HeadVarianceProfile> profile = context.calibrations
                                                                 ? context.calibrations->head_variance()
                                                                 : nullptr;
  classify(profile ? *profile : HeadVarianceProfile::uniform(context));
  calibrated_ = profile != nullptr;
}

void HackPolicy::classify(const HeadVarianceProfile& profile) {
  profile.check_matches(context_);
  const int64_t B = options_.budget;
  // Offline classification: the heads of highest attention variance are contextual.
  const int64_t heads = context_.n_layer * context_.kv_heads;
  const int64_t n_c = std::llround(options_.contextual * static_cast<double>(heads)), n_s = heads - n_c;
  contextual_ = profile.contextual_heads(n_c);

  // Asymmetric budgets with n_c B_c + n_s B_s <= heads x B.
  if (n_c == 0 || n_s == 0) {
    contextual_budget_ = structural_budget_ = B;
    return;
  }
  const double f = static_cast<double>(n_c) / static_cast<double>(heads);
  structural_budget_ = static_cast<int64_t>(std::floor(static_cast<double>(B) / (f * options_.ratio + 1 - f) + 1e-9));
  contextual_budget_ = static_cast<int64_t>(
      std::floor(options_.ratio * static_cast<double>(structural_budget_) + 1e-9));
  const int64_t floor_budget = sink_tokens_ + 1;
  if (contextual_budget_ < floor_budget) {
    contextual_budget_ = floor_budget;
    structural_budget_ = (heads * B - n_c * contextual_budget_) / n_s;
  }
  if (structural_budget_ < floor_budget) {
    structural_budget_ = floor_budget;
    contextual_budget_ = (heads * B - n_s * structural_budget_) / n_c;
  }
}

int64_t HackPolicy::max_entries() const {
  // A scale's entries arrive before its layer's cut.
  return std::min(context_.image_tokens(), budget_tokens() + context_.unit_tokens.back());
}

int64_t HackPolicy::initial_entries() const {
  return std::min(context_.image_tokens(), options_.budget + context_.unit_tokens.back());
}

void HackPolicy::after_token(KvStore&, int64_t) {
  throw InvalidArgumentError("policy hack works on next-scale (VAR) models only");
}

void HackPolicy::observe_unit_attention(int64_t layer, int64_t, const at::Tensor& key_mass, const at::Tensor&) {
  key_mass_.at(static_cast<size_t>(layer)) = key_mass;
}

void HackPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t unit) {
  const int64_t H = store.kv_heads(), cond = context_.condition_tokens;
  const ImageSlots s = image_slots(store, layer, cond);
  const int64_t decide = decision_rows(store, context_);
  std::vector<int64_t> budgets(static_cast<size_t>(H));
  std::vector<uint8_t> contextual(static_cast<size_t>(H));
  for (int64_t h = 0; h < H; ++h) {
    budgets[static_cast<size_t>(h)] = head_budget(layer, h);
    contextual[static_cast<size_t>(h)] = is_contextual(layer, h) ? 1 : 0;
  }
  const at::Tensor budget = at::tensor(budgets, at::TensorOptions().dtype(at::kLong)).view({1, H});
  const at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, decide) - budget, 0);
  if (evict.max().item<int64_t>() == 0) return;
  const at::Tensor candidates = s.is_image & (s.positions >= cond + sink_tokens_);

  // Contextual heads: the attention the scale's queries put on each entry.
  const at::Tensor& mass = key_mass_.at(static_cast<size_t>(layer));
  at::Tensor attention;
  if (mass.defined() && mass.size(2) >= s.length && mass.size(0) >= store.rows())
    attention = mass.narrow(0, 0, store.rows()).narrow(2, 0, s.length).to(at::kCPU, at::kFloat);
  else attention = at::zeros({store.rows(), H, s.length}, at::kFloat);  // not observed: the oldest go
  // Structural heads: newer scales first, then the spatially uniform order.
  int64_t largest = 0;
  for (int64_t t : context_.unit_tokens) largest = std::max(largest, t);
  const at::Tensor units = unit_of_slots(store, layer, context_);  // [rows, H, len], -1: empty
  at::Tensor within = at::zeros_like(s.positions);
  for (int64_t u = 0; u <= unit && u < static_cast<int64_t>(spatial_rank_.size()); ++u) {
    const int64_t begin = cond + context_.unit_begin(u), t = context_.unit_tokens[static_cast<size_t>(u)];
    const at::Tensor rank = at::tensor(spatial_rank_[static_cast<size_t>(u)], at::TensorOptions().dtype(at::kLong));
    const at::Tensor in_unit = units == u;
    const at::Tensor offset = at::where(in_unit, s.positions - begin, at::zeros_like(s.positions)).clamp(0, t - 1);
    within = at::where(in_unit, rank.index_select(0, offset.reshape({-1})).reshape(offset.sizes()), within);
  }
  const at::Tensor layout = (units * (largest + 1) + (largest - within)).to(at::kFloat);

  const at::Tensor is_contextual = at::tensor(std::vector<int64_t>(contextual.begin(), contextual.end()),
                                              at::TensorOptions().dtype(at::kLong))
                                       .view({1, H, 1}) != 0;
  const at::Tensor score = at::where(is_contextual, attention, layout);
  apply_keep(store, layer, keep_all_but_lowest(score.narrow(0, 0, decide), candidates.narrow(0, 0, decide), evict),
             context_);
}

std::vector<CacheRegion> HackPolicy::regions(int64_t positions) const {
  const int64_t cond = context_.condition_tokens;
  const int64_t done = std::clamp<int64_t>(positions - cond, 0, context_.image_tokens());
  const int64_t sinks_end = std::min(sink_tokens_, done);
  if (sinks_end <= 0) return {};
  return {{"sinks", "sink scales", cond, cond + sinks_end}};
}

PolicyInfo hack_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back(fraction_param("contextual", "1/2", 0, 1,
                                  "share of the heads classified contextual (highest calibrated attention variance)"));
  params.push_back(
      real_param("ratio", "1/2", 0.01, 100, "contextual heads' budget over structural heads' (the average stays B)"));
  params.push_back(integer_param("sinks", "3", 0, 1e6, "first scales every head keeps as attention sinks"));
  return {{"hack",
           "HACK: offline contextual / structural head split by attention variance, asymmetric budgets, "
           "attention-score selection for contextual heads and spatial layout for structural heads",
           "Qin et al. 2026 (HACK, AAAI, arXiv 2504.09261); baseline in HeatKV §4",
           params,
           {"scale"}},
          [](const PolicyParams& p, const PolicyContext& c) -> std::unique_ptr<CachePolicy> {
            HackOptions o;
            o.budget = resolve_budget_tokens(p, c, "hack");
            o.contextual = p.real("contextual");
            o.ratio = p.real("ratio");
            o.sinks = p.integer("sinks");
            return std::make_unique<HackPolicy>(c, o);
          }};
}

}  // namespace kvs
