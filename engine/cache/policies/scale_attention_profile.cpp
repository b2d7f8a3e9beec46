#include "engine/cache/policies/scale_attention_profile.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/cache/policies/calibration_header.h"
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
  const CalibrationReader file(text, source, kFormat, "a scale-attention calibration");
  ScaleAttentionProfile p;
  file.header().copy_to(p);
  p.heads = file.integer("heads");
  p.samples = file.integer("samples", 0);
  p.beta = file.reals("beta");
  auto bad = [&](const std::string& why) { return file.error(why); };
  if (p.heads <= 0) throw bad("at least one head is required");
  const int64_t k = p.scales();
  file.require_table_size("beta", p.beta.size(), {p.layers, p.heads, k, k}, "layers x heads x scales^2");
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
