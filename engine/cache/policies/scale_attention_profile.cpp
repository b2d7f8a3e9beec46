#include "engine/cache/policies/scale_attention_profile.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"

namespace kvs {
namespace {

constexpr const char* kFormat = "kvstudio-scale-attention-profile";

}  // namespace

double ScaleAttentionProfile::beta_at(int64_t layer, int64_t head, int64_t k1, int64_t k2) const {
  const int64_t k = scales();
  return beta.at(static_cast<size_t>(((layer * heads + head) * k + k1) * k + k2));
}

double& ScaleAttentionProfile::beta_at(int64_t layer, int64_t head, int64_t k1, int64_t k2) {
  const int64_t k = scales();
  return beta.at(static_cast<size_t>(((layer * heads + head) * k + k1) * k + k2));
}

double ScaleAttentionProfile::cas(int64_t layer, int64_t head, int64_t sinks) const {
  const int64_t k = scales();
  double sum = 0;
  for (int64_t tau = sinks; tau <= k - 2; ++tau) sum += beta_at(layer, head, k - 1, tau);
  return sum / static_cast<double>(k - sinks);
}

double ScaleAttentionProfile::scas(int64_t layer, int64_t head, int64_t source) const {
  const int64_t k = scales();
  double sum = 0;
  for (int64_t tau = source + 1; tau <= k - 1; ++tau) sum += beta_at(layer, head, tau, source);
  return sum / static_cast<double>(k - 1 - source);
}

std::string ScaleAttentionProfile::to_json_text() const {
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
  j["beta_layout"] = "[layer][head][query scale][key scale]";
  j["beta"] = beta;
  return j.dump(1) + "\n";
}

ScaleAttentionProfile ScaleAttentionProfile::from_json_text(const std::string& text, const std::string& source) {
  auto bad = [&](const std::string& why) {
    return FormatError(source + ": not a scale-attention calibration: " + why);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  // value("format", "") would throw nlohmann's own error for a non-string format.
  const auto format = j.is_object() ? j.find("format") : j.end();
  if (!j.is_object() || format == j.end() || !format->is_string() || *format != kFormat)
    throw bad("format is not '" + std::string(kFormat) + "'");
  ScaleAttentionProfile p;
  try {
    if (j.at("version") != 1) throw bad("unsupported version " + j.at("version").dump());
    p.model = j.value("model", std::string());
    p.layers = j.at("layers").get<int64_t>();
    p.heads = j.at("heads").get<int64_t>();
    p.unit_tokens = j.at("unit_tokens").get<std::vector<int64_t>>();
    p.classes = j.value("classes", std::vector<int64_t>{});
    p.seed = j.value("seed", uint64_t{0});
    p.cfg = j.value("cfg", 0.0);
    p.samples = j.value("samples", int64_t{0});
    p.beta = j.at("beta").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  const int64_t k = p.scales();
  if (p.layers <= 0 || p.heads <= 0 || k < 2) throw bad("layers, heads and at least two scales are required");
  for (int64_t t : p.unit_tokens)
    if (t <= 0) throw bad("a scale has no tokens");
  // layers x heads x scales^2, overflow-checked: a file may claim 2^32 layers.
  int64_t expected = 0;
  const bool overflow = __builtin_mul_overflow(p.layers, p.heads, &expected) ||
                        __builtin_mul_overflow(expected, k * k, &expected);
  if (overflow || static_cast<int64_t>(p.beta.size()) != expected)
    throw bad("beta has " + std::to_string(p.beta.size()) + " values, expected " +
              (overflow ? std::string("layers x heads x scales^2 = more than 2^63") : std::to_string(expected)));
  for (int64_t l = 0; l < p.layers; ++l)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t k1 = 0; k1 < k; ++k1) {
        double row = 0;
        for (int64_t k2 = 0; k2 < k; ++k2) {
          const double v = p.beta_at(l, h, k1, k2);
          if (!std::isfinite(v) || v < 0 || (k2 > k1 && v != 0))
            throw bad("beta[" + std::to_string(l) + "][" + std::to_string(h) + "][" + std::to_string(k1) + "][" +
                      std::to_string(k2) + "] = " + std::to_string(v) + " is not an attention mass");
          row += v;
        }
        if (std::abs(row - 1.0) > 1e-3)
          throw bad("beta row [" + std::to_string(l) + "][" + std::to_string(h) + "][" + std::to_string(k1) +
                    "] sums to " + std::to_string(row) + ", not 1");
      }
  return p;
}

void ScaleAttentionProfile::save(const std::string& path) const { io::write_file_atomic(path, to_json_text()); }

ScaleAttentionProfile ScaleAttentionProfile::load(const std::string& path) {
  return from_json_text(io::read_text_file(path), path);
}

}  // namespace kvs
