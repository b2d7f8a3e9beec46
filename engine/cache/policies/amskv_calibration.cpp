#include "engine/cache/policies/amskv_calibration.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/cache/policies/calibration_header.h"
#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"

namespace kvs {
namespace {

constexpr const char* kFormat = "kvstudio-amskv-calibration";

}  // namespace

AmsKvTheta choose_amskv_theta(const std::vector<double>& layer_statistic, double demanding_fraction) {
  const auto n = static_cast<int64_t>(layer_statistic.size());
  if (n < 1) throw InvalidArgumentError("amskv calibration: no layers to classify");
  if (!(demanding_fraction > 0 && demanding_fraction < 1))
    throw InvalidArgumentError("amskv calibration: the demanding fraction must be in (0, 1), got " +
                               std::to_string(demanding_fraction));
  for (double v : layer_statistic)
    if (!std::isfinite(v)) throw InvalidArgumentError("amskv calibration: a layer's similarity is not finite");
  std::vector<double> v = layer_statistic;
  std::sort(v.begin(), v.end());
  AmsKvTheta out;
  // At least one layer and fewer than all: both ends are the degenerate regimes.
  out.target_layers = n < 2 ? 0
                            : std::clamp<int64_t>(std::llround(demanding_fraction * static_cast<double>(n)), 1, n - 1);
  // j layers demanding needs a gap between the j-th and (j+1)-th lowest; j = 0
  // (theta on the lowest value, strict <) always exists.
  int64_t best = 0;
  for (int64_t j = 1; j < n; ++j) {
    if (!(v[static_cast<size_t>(j - 1)] < v[static_cast<size_t>(j)])) continue;
    if (std::llabs(j - out.target_layers) < std::llabs(best - out.target_layers)) best = j;
  }
  out.demanding_layers = best;
  out.theta = best == 0 ? v[0] : 0.5 * (v[static_cast<size_t>(best - 1)] + v[static_cast<size_t>(best)]);
  return out;
}

void AmsKvCalibration::derive_theta() {
  if (decision_scales.empty())
    throw InvalidArgumentError("amskv calibration: no scale makes a layer at C_min decide (C_min " +
                               std::to_string(c_min) + " tokens holds every scale)");
  const int64_t n = images();
  if (n < 1) throw InvalidArgumentError("amskv calibration: no images profiled");
  layer_statistic.assign(static_cast<size_t>(layers), 0.0);
  for (int64_t l = 0; l < layers; ++l) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      double lowest = INFINITY;
      for (int64_t s : decision_scales)
        lowest =
            std::min(lowest,
                     similarity.at(static_cast<size_t>(i)).at(static_cast<size_t>(l)).at(static_cast<size_t>(s - 1)));
      sum += lowest;
    }
    layer_statistic[static_cast<size_t>(l)] = sum / static_cast<double>(n);
  }
  theta = choose_amskv_theta(layer_statistic, demanding_fraction);
}

std::string AmsKvCalibration::to_json_text() const {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = 1;
  j["model"] = model;
  j["created"] = created;
  j["command"] = command;
  j["layers"] = layers;
  j["unit_tokens"] = unit_tokens;
  j["classes"] = classes;
  j["seed"] = seed;
  j["cfg"] = cfg;
  j["cds"] = cds;
  j["c_min"] = c_min;
  j["c_max"] = c_max;
  j["decision_scales"] = decision_scales;
  j["rule"] =
      "per layer: the lowest S over the decision scales, averaged over the images; theta between the k-th and "
      "(k+1)-th lowest, k = round(demanding_fraction x layers) in [1, layers - 1]";
  j["demanding_fraction"] = demanding_fraction;
  j["target_layers"] = theta.target_layers;
  j["demanding_layers"] = theta.demanding_layers;
  j["theta"] = theta.theta;
  j["layer_statistic"] = layer_statistic;
  j["similarity_layout"] = "[image][layer][scale i - 1]: S of scale i to scale i - 1";
  j["similarity"] = similarity;
  return j.dump(1) + "\n";
}

AmsKvCalibration AmsKvCalibration::from_json_text(const std::string& text, const std::string& source) {
  const CalibrationReader file(text, source, kFormat, "an AMS-KV calibration");
  AmsKvCalibration c;
  file.header().copy_to(c);
  c.created = file.text("created", std::string());
  c.command = file.text("command", std::string());
  c.cds = file.integer("cds", 0);
  c.c_min = file.integer("c_min", 0);
  c.c_max = file.integer("c_max", 0);
  c.decision_scales = file.integers("decision_scales");
  c.demanding_fraction = file.real("demanding_fraction");
  c.theta.target_layers = file.integer("target_layers", 0);
  c.theta.demanding_layers = file.integer("demanding_layers", 0);
  c.theta.theta = file.real("theta");
  c.layer_statistic = file.reals("layer_statistic");
  c.similarity = file.reals_3d("similarity");
  auto bad = [&](const std::string& why) { return file.error(why); };
  const int64_t k = c.scales();
  if (!std::isfinite(c.theta.theta)) throw bad("theta is not a finite number");
  if (static_cast<int64_t>(c.layer_statistic.size()) != c.layers)
    throw bad("layer_statistic has " + std::to_string(c.layer_statistic.size()) + " values, expected one per layer (" +
              std::to_string(c.layers) + ")");
  for (double v : c.layer_statistic)
    if (!std::isfinite(v)) throw bad("a layer_statistic value is not a finite number");
  for (int64_t s : c.decision_scales)
    if (s < 1 || s >= k) throw bad("decision scale " + std::to_string(s) + " is outside 1.." + std::to_string(k - 1));
  for (const auto& image : c.similarity) {
    if (static_cast<int64_t>(image.size()) != c.layers)
      throw bad("similarity has " + std::to_string(image.size()) + " layers for an image, expected " +
                std::to_string(c.layers));
    for (const auto& layer : image) {
      if (static_cast<int64_t>(layer.size()) != k - 1)
        throw bad("similarity has " + std::to_string(layer.size()) + " scales for a layer, expected " +
                  std::to_string(k - 1));
      for (double v : layer)
        if (!std::isfinite(v)) throw bad("a similarity value is not a finite number");
    }
  }
  return c;
}

void AmsKvCalibration::save(const std::string& path) const { io::write_file_atomic(path, to_json_text()); }

AmsKvCalibration AmsKvCalibration::load(const std::string& path) {
  return from_json_text(io::read_text_file(path), path);
}

}  // namespace kvs
