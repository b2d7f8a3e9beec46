#include "engine/generation/scale/calibration_report.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "engine/core/errors.h"
#include "engine/session/bundle_info.h"

namespace kvs::scale {

// HeatKV's calibration as `calibrate` prints it: per source scale, how much later
// scales lean on it (mean S-CAS over heads, and its spread).
std::string scas_table(const ScaleAttentionProfile& profile) {
  std::string out = "source scale  tokens  mean S-CAS  min head  max head";
  for (int64_t i = 0; i + 1 < profile.scales(); ++i) {
    double sum = 0, lo = 1e300, hi = -1e300;
    for (int64_t l = 0; l < profile.layers; ++l)
      for (int64_t h = 0; h < profile.heads; ++h) {
        const double v = profile.scas(l, h, i);
        sum += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    out += format_text("\n%12lld  %6lld  %10.4f  %8.4f  %8.4f", static_cast<long long>(i),
                       static_cast<long long>(profile.unit_tokens[static_cast<size_t>(i)]),
                       sum / static_cast<double>(profile.layers * profile.heads), lo, hi);
  }
  return out;
}

// AMS-KV's calibration as `calibrate` prints it: per layer the statistic theta
// is chosen on, and which layers fall below theta.
std::string similarity_table(const AmsKvCalibration& c) {
  std::string out = format_text("theta %.6g: %lld of %lld layers cache-demanding (target %lld = %.4g of them)",
                                c.theta.theta, static_cast<long long>(c.theta.demanding_layers),
                                static_cast<long long>(c.layers), static_cast<long long>(c.theta.target_layers),
                                c.demanding_fraction);
  out += "\nS per layer: the lowest over scales " + join_ints(c.decision_scales) + ", mean over the images";
  out += "\nlayer           S  cache-demanding";
  for (int64_t l = 0; l < c.layers; ++l) {
    const double s = c.layer_statistic[static_cast<size_t>(l)];
    out += format_text("\n%5lld  %10.6f  %s", static_cast<long long>(l), s, s < c.theta.theta ? "yes" : "no");
  }
  return out;
}

// ScaleKV's calibration as `calibrate` prints it: per layer and scale the ASI's
// Z-score within the scale (Eq. 3); the lowest become drafters (how many depends
// on the run's budget and drafter share).
std::string selectivity_table(const LayerSelectivityProfile& p) {
  std::string out = format_text("ASI Z-score per layer (rows) and scale (columns), K' = %lld; lowest = drafters",
                                static_cast<long long>(p.top_k));
  out += "\nlayer";
  for (int64_t k = 1; k < p.scales(); ++k) out += format_text("  %6lld", static_cast<long long>(k));
  for (int64_t l = 0; l < p.layers; ++l) {
    out += format_text("\n%5lld", static_cast<long long>(l));
    // Scale 0 has no history (P_{-1} is empty): its ASI is 0 in every layer.
    for (int64_t k = 1; k < p.scales(); ++k) out += format_text("  %6.2f", p.z_score(l, k));
  }
  return out;
}

// HACK's calibration as `calibrate` prints it: per layer each head's score (the
// mean normalised attention variance) and its class at the default split (the
// upper half of the scores contextual).
std::string variance_table(const HeadVarianceProfile& p) {
  const std::vector<uint8_t> contextual = p.contextual_heads((p.layers * p.heads + 1) / 2);
  std::string out = "attention variance per head (mean over scales 1.." + std::to_string(p.scales() - 1) +
                    "); C: contextual, S: structural at contextual=1/2";
  for (int64_t l = 0; l < p.layers; ++l) {
    out += format_text("\nlayer %2lld:", static_cast<long long>(l));
    for (int64_t h = 0; h < p.heads; ++h)
      out += format_text(" %8.3f %s", p.score(l, h), contextual[static_cast<size_t>(l * p.heads + h)] ? "C" : "S");
  }
  return out;
}

// Now in UTC, ISO 8601 (what a calibration file records).
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

bool is_calibrated_scale_policy(const std::string& policy) {
  return policy == "heatkv" || policy == "scalekv" || policy == "hack" || policy == "amskv";
}

std::string calibration_file(const std::string& policy) {
  if (policy == "heatkv") return kScaleAttentionProfileFile;
  if (policy == "scalekv") return kScaleKvCalibrationFile;
  if (policy == "hack") return kHeadVarianceProfileFile;
  if (policy == "amskv") return kAmsKvCalibrationFile;
  throw InvalidArgumentError("policy '" + policy + "' has no calibration file");
}

std::string write_calibration(const std::string& policy, const std::string& out,
                              const ScaleCalibrationMeasures& measure, const std::string& command) {
  if (policy == "heatkv") {
    const ScaleAttentionProfile profile = measure.heatkv();
    profile.save(out);
    return scas_table(profile);
  }
  if (policy == "scalekv") {
    const LayerSelectivityProfile profile = measure.scalekv();
    profile.save(out);
    return selectivity_table(profile);
  }
  if (policy == "hack") {
    const HeadVarianceProfile profile = measure.hack();
    profile.save(out);
    return variance_table(profile);
  }
  if (policy == "amskv") {
    AmsKvCalibration calibration = measure.amskv();
    calibration.created = utc_now();
    calibration.command = command;
    calibration.save(out);
    return similarity_table(calibration);
  }
  throw InvalidArgumentError("policy '" + policy + "' has no calibration to write");
}

}  // namespace kvs::scale
