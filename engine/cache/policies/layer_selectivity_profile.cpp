#include "engine/cache/policies/layer_selectivity_profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/cache/policies/cache_policy.h"
#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"

namespace kvs {
namespace {

constexpr const char* kFormat = "kvstudio-scalekv-calibration";

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
                               geometry(context.n_layer, context.unit_tokens) +
                               "): run 'kvstudio-cli calibrate --policy scalekv --model DIR' again");
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

std::string LayerSelectivityProfile::to_json_text() const {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = 1;
  j["model"] = model;
  j["layers"] = layers;
  j["unit_tokens"] = unit_tokens;
  j["top_k"] = top_k;
  j["classes"] = classes;
  j["seed"] = seed;
  j["cfg"] = cfg;
  j["samples"] = samples;
  j["layout"] = "[layer][scale]";
  j["current_ratio"] = current_ratio;
  j["history_top_k"] = history_top_k;
  return j.dump(1) + "\n";
}

LayerSelectivityProfile LayerSelectivityProfile::from_json_text(const std::string& text, const std::string& source) {
  auto bad = [&](const std::string& why) { return FormatError(source + ": not a ScaleKV calibration: " + why); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", std::string()) != kFormat)
    throw bad("format is not '" + std::string(kFormat) + "'");
  LayerSelectivityProfile p;
  try {
    if (j.at("version").get<int>() != 1) throw bad("unsupported version " + j.at("version").dump());
    p.model = j.value("model", std::string());
    p.layers = j.at("layers").get<int64_t>();
    p.unit_tokens = j.at("unit_tokens").get<std::vector<int64_t>>();
    p.top_k = j.at("top_k").get<int64_t>();
    p.classes = j.value("classes", std::vector<int64_t>{});
    p.seed = j.value("seed", uint64_t{0});
    p.cfg = j.value("cfg", 0.0);
    p.samples = j.value("samples", int64_t{0});
    p.current_ratio = j.at("current_ratio").get<std::vector<double>>();
    p.history_top_k = j.at("history_top_k").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  // Bounded geometry: the ASI tables below are layers x scales doubles.
  if (p.layers <= 0 || p.layers > 4096 || p.scales() < 2 || p.scales() > 4096)
    throw bad("layers (1..4096) and 2..4096 scales are required");
  for (int64_t t : p.unit_tokens)
    if (t <= 0) throw bad("a scale has no tokens");
  if (p.top_k < 1) throw bad("top_k must be >= 1");
  const auto n = static_cast<size_t>(p.layers * p.scales());
  if (p.current_ratio.size() != n || p.history_top_k.size() != n)
    throw bad("current_ratio and history_top_k need " + std::to_string(n) + " values each (" +
              geometry(p.layers, p.unit_tokens) + "), got " + std::to_string(p.current_ratio.size()) + " and " +
              std::to_string(p.history_top_k.size()));
  // Both terms are shares of a softmax row: in [0, 1] (a little slack for rounding).
  for (size_t i = 0; i < n; ++i)
    for (const double v : {p.current_ratio[i], p.history_top_k[i]})
      if (!std::isfinite(v) || v < 0 || v > 1 + 1e-6)
        throw bad("layer " + std::to_string(static_cast<int64_t>(i) / p.scales()) + ", scale " +
                  std::to_string(static_cast<int64_t>(i) % p.scales()) + ": " + std::to_string(v) +
                  " is not an attention share");
  return p;
}

void LayerSelectivityProfile::save(const std::string& path) const { io::write_file_atomic(path, to_json_text()); }

LayerSelectivityProfile LayerSelectivityProfile::load(const std::string& path) {
  return from_json_text(io::read_text_file(path), path);
}

}  // namespace kvs
