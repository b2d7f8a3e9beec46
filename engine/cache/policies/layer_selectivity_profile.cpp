#include "engine/cache/policies/layer_selectivity_profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/cache/policies/calibration_header.h"
#include "engine/io/mapped_file.h"

namespace kvs {
namespace {

constexpr const char* kFormat = "kvstudio-scalekv-calibration";

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
  const CalibrationReader file(text, source, kFormat, "a ScaleKV calibration");
  LayerSelectivityProfile p;
  file.header().copy_to(p);
  p.top_k = file.integer("top_k");
  p.samples = file.integer("samples", 0);
  p.current_ratio = file.reals("current_ratio");
  p.history_top_k = file.reals("history_top_k");
  auto bad = [&](const std::string& why) { return file.error(why); };
  if (p.top_k < 1) throw bad("top_k must be >= 1");
  const auto n = static_cast<size_t>(p.layers * p.scales());
  if (p.current_ratio.size() != n || p.history_top_k.size() != n)
    throw bad("current_ratio and history_top_k need " + std::to_string(n) + " values each (" +
              calibration_geometry(p.layers, p.unit_tokens) + "), got " + std::to_string(p.current_ratio.size()) +
              " and " + std::to_string(p.history_top_k.size()));
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
