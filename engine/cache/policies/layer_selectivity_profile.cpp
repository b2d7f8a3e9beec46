#include "engine/cache/policies/layer_selectivity_profile.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/cache/policies/cache_policy.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

std::string geometry(int64_t layers, const std::vector<int64_t>& tokens) {
  std::string s = std::to_string(layers) + " layers, scales of";
  for (int64_t t : tokens) s += " " + std::to_string(t);
  return s + " tokens";
}

}  // namespace

double LayerSelectivityProfile::asi(int64_t layer, int64_t scale) const {
  const auto at = static_cast<size_t>(layer * scales() + scale);
  return current_ratio.at(at) * history_top_k.at(at);
}

double LayerSelectivityProfile::z_score(int64_t layer, int64_t scale) const {
  double mean = 0;
  for (int64_t l = 0; l < layers; ++l) mean += asi(l, scale);
  mean /= static_cast<double>(layers);
  double var = 0;
  for (int64_t l = 0; l < layers; ++l) var += (asi(l, scale) - mean) * (asi(l, scale) - mean);
  const double sigma = std::sqrt(var / static_cast<double>(layers));
  return (asi(layer, scale) - mean) / (sigma + 1e-8);
}

std::vector<uint8_t> LayerSelectivityProfile::drafters(const std::vector<int64_t>& chosen_scales, int64_t count) const {
  struct Pair {
    int64_t layer, scale;
    double z;
  };
  std::vector<Pair> pairs;
  for (int64_t k : chosen_scales)
    for (int64_t l = 0; l < layers; ++l) pairs.push_back({l, k, z_score(l, k)});
  // Stable on (scale, layer) order, so equal Z goes to the lower scale, then layer.
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.z < b.z; });
  std::vector<uint8_t> flags(static_cast<size_t>(layers * scales()), 0);
  const auto n = static_cast<size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(pairs.size())));
  for (size_t i = 0; i < n; ++i) flags[static_cast<size_t>(pairs[i].layer * scales() + pairs[i].scale)] = 1;
  return flags;
}

void LayerSelectivityProfile::check_matches(const PolicyContext& context) const {
  if (layers != context.n_layer || unit_tokens != context.unit_tokens)
    throw InvalidArgumentError("the attention-selectivity calibration (" + geometry(layers, unit_tokens) +
                               ") was made for another model than this one (" +
                               geometry(context.n_layer, context.unit_tokens) + ")");
}

LayerSelectivityProfile LayerSelectivityProfile::uniform(const PolicyContext& context, int64_t top_k) {
  LayerSelectivityProfile p;
  p.layers = context.n_layer;
  p.unit_tokens = context.unit_tokens;
  p.top_k = top_k;
  const auto n = static_cast<size_t>(p.layers * p.scales());
  p.current_ratio.assign(n, 0.5);
  p.history_top_k.assign(n, 0.5);
  return p;
}

}  // namespace kvs
