#include "engine/cache/policies/head_variance_profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cache/policies/cache_policy.h"
#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"

namespace kvs {
namespace {

constexpr const char* kFormat = "kvstudio-head-variance-profile";

std::string geometry(int64_t layers, int64_t heads, const std::vector<int64_t>& tokens) {
  std::string s = std::to_string(layers) + " layers x " + std::to_string(heads) + " heads, scales of";
  for (int64_t t : tokens) s += " " + std::to_string(t);
  return s + " tokens";
}

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

void HeadVarianceProfile::check_matches(const PolicyContext& context) const {
  if (layers != context.n_layer || heads != context.kv_heads || unit_tokens != context.unit_tokens)
    throw InvalidArgumentError("the HACK head calibration (" + geometry(layers, heads, unit_tokens) +
                               ") was made for another model than this one (" +
                               geometry(context.n_layer, context.kv_heads, context.unit_tokens) +
                               "): run 'kvstudio-cli calibrate --policy hack --model DIR' again");
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
  auto bad = [&](const std::string& why) { return FormatError(source + ": not a HACK head calibration: " + why); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", std::string()) != kFormat)
    throw bad("format is not '" + std::string(kFormat) + "'");
  HeadVarianceProfile p;
  try {
    if (j.at("version").get<int>() != 1) throw bad("unsupported version " + j.at("version").dump());
    p.model = j.value("model", std::string());
    p.layers = j.at("layers").get<int64_t>();
    p.heads = j.at("heads").get<int64_t>();
    p.unit_tokens = j.at("unit_tokens").get<std::vector<int64_t>>();
    p.classes = j.value("classes", std::vector<int64_t>{});
    p.seed = j.value("seed", uint64_t{0});
    p.cfg = j.value("cfg", 0.0);
    p.samples = j.value("samples", int64_t{0});
    p.variance = j.at("variance").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  const int64_t k = p.scales();
  if (p.layers <= 0 || p.heads <= 0 || k < 2) throw bad("layers, heads and at least two scales are required");
  for (int64_t t : p.unit_tokens)
    if (t <= 0) throw bad("a scale has no tokens");
  if (static_cast<int64_t>(p.variance.size()) != p.layers * p.heads * k)
    throw bad("variance has " + std::to_string(p.variance.size()) + " values, expected " +
              std::to_string(p.layers * p.heads * k));
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

HeadVarianceProfile HeadVarianceProfile::uniform(const PolicyContext& context) {
  HeadVarianceProfile p;
  p.model = "uniform";
  p.layers = context.n_layer;
  p.heads = context.kv_heads;
  p.unit_tokens = context.unit_tokens;
  p.variance.assign(static_cast<size_t>(p.layers * p.heads * p.scales()), 0.0);
  return p;
}

}  // namespace kvs
