#include "engine/cache/policies/head_variance_profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cache/policies/calibration_header.h"
#include "engine/io/mapped_file.h"

namespace kvs {
namespace {

constexpr const char* kFormat = "kvstudio-head-variance-profile";

}  // namespace

double HeadVarianceProfile::variance_at(int64_t layer, int64_t head, int64_t scale) const {
  return variance.at(static_cast<size_t>((layer * heads + head) * scales() + scale));
}

double& HeadVarianceProfile::variance_at(int64_t layer, int64_t head, int64_t scale) {
  return variance.at(static_cast<size_t>((layer * heads + head) * scales() + scale));
}

double HeadVarianceProfile::score(int64_t layer, int64_t head) const {
  const int64_t k = scales();
  if (k < 2) return 0;
  double sum = 0;
  for (int64_t s = 1; s < k; ++s) sum += variance_at(layer, head, s);
  return sum / static_cast<double>(k - 1);
}

std::vector<uint8_t> HeadVarianceProfile::contextual_heads(int64_t count) const {
  const int64_t n = layers * heads;
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> scores(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) scores[static_cast<size_t>(i)] = score(i / heads, i % heads);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)];
  });
  std::vector<uint8_t> flags(static_cast<size_t>(n), 0);
  const int64_t take = std::clamp<int64_t>(count, 0, n);
  for (int64_t i = 0; i < take; ++i) flags[static_cast<size_t>(order[static_cast<size_t>(i)])] = 1;
  return flags;
}

std::string HeadVarianceProfile::to_json_text() const {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = 1;
  j["model"] = model;
  j["layers"] = layers;
  j["heads"] = heads;
  j["unit_tokens"] = unit_tokens;
  j["classes"] = classes;
  j["seed"] = seed;
  j["cfg"] = cfg;
  j["samples"] = samples;
  j["variance_layout"] = "[layer][head][query scale]";
  j["variance"] = variance;
  return j.dump(1) + "\n";
}

HeadVarianceProfile HeadVarianceProfile::from_json_text(const std::string& text, const std::string& source) {
  const CalibrationReader file(text, source, kFormat, "a HACK head calibration");
  HeadVarianceProfile p;
  file.header().copy_to(p);
  p.heads = file.integer("heads");
  p.samples = file.integer("samples", 0);
  p.variance = file.reals("variance");
  auto bad = [&](const std::string& why) { return file.error(why); };
  if (p.heads <= 0) throw bad("at least one head is required");
  file.require_table_size("variance", p.variance.size(), {p.layers, p.heads, p.scales()}, "layers x heads x scales");
  for (size_t i = 0; i < p.variance.size(); ++i)
    if (!std::isfinite(p.variance[i]) || p.variance[i] < 0)
      throw bad("variance value " + std::to_string(i) + " = " + std::to_string(p.variance[i]) +
                " is not a normalised variance (finite, >= 0)");
  return p;
}

void HeadVarianceProfile::save(const std::string& path) const { io::write_file_atomic(path, to_json_text()); }

HeadVarianceProfile HeadVarianceProfile::load(const std::string& path) {
  return from_json_text(io::read_text_file(path), path);
}

}  // namespace kvs
