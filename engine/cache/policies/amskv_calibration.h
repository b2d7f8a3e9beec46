#pragma once
// AMS-KV's offline threshold profiling (the paper's Appendix E: "a one-time
// offline profiling step to determine a meaningful operating range of theta", so
// that neither all layers nor none are cache-demanding). theta = -0.008 is
// VAR-d30's value; on other models every layer may fall below it (the trained
// VAR demo: all six layers, 63 % of the full cache kept). Written by
// `kvstudio-cli calibrate --policy amskv` to amskv_calibration.json in (or
// beside) the bundle; the policy takes its theta unless theta= is given. Torch-free.
//
// What is measured: a few images (one per calibration class) generated with the
// full cache, CFG rows as generation runs them; per image, layer and scale i >= 1
// the similarity S of scale i to scale i-1 (scale_key_similarity.h, the policy's
// own computation) on the image's conditional row.
//
// The rule for theta: Table 2 of the paper gives C_max to one sixth of the layers,
// so a target share f of the layers (default 1/6, the share allocation=uniform
// gives C_max) should be cache-demanding: k = round(f x layers), at least one and
// fewer than all. Per layer the statistic is, per image, the lowest S over the
// decision scales (the scales at which a layer still at C_min runs the promotion
// test: Algorithm 1 promotes once and for good, so the lowest S it meets decides),
// averaged over the images. theta is the midpoint between the k-th and
// (k+1)-th lowest statistics, so exactly the k lowest fall below it (S < theta).
// Ties at that boundary cannot be split: theta goes to the nearest gap between
// distinct statistics (the smaller count when two are equally near), or onto the
// lowest statistic (no layer demanding) when all are equal. The actual count is
// stored beside the target.
#include <cstdint>
#include <string>
#include <vector>

namespace kvs {

struct PolicyContext;

struct AmsKvTheta {
  double theta = 0;
  int64_t target_layers = 0;     // k = round(f x layers), in [1, layers - 1] (0 for a single layer)
  int64_t demanding_layers = 0;  // layers whose statistic is below theta
};

// The rule above on per-layer statistics (finite) and a target share in (0, 1).
AmsKvTheta choose_amskv_theta(const std::vector<double>& layer_statistic, double demanding_fraction);

struct AmsKvCalibration {
  std::string model;  // the bundle's name when calibrated
  int64_t layers = 0;
  std::vector<int64_t> unit_tokens;  // tokens per scale (1, 4, 9, ...)
  std::vector<int64_t> classes;      // one image per class
  uint64_t seed = 0;
  double cfg = 0;
  std::string created;  // UTC time of the calibration, ISO 8601
  std::string command;  // how it was made, when known
  // The policy's budgets the decision scales were found for (cds in scales,
  // C_min/C_max in tokens) and those scales.
  int64_t cds = 0, c_min = 0, c_max = 0;
  std::vector<int64_t> decision_scales;
  // similarity[image][layer][i - 1]: S of scale i to scale i - 1, i = 1 .. scales - 1.
  std::vector<std::vector<std::vector<double>>> similarity;
  std::vector<double> layer_statistic;  // [layer]: mean over images of the lowest S over the decision scales
  double demanding_fraction = 1.0 / 6.0;
  AmsKvTheta theta;

  int64_t scales() const { return static_cast<int64_t>(unit_tokens.size()); }
  int64_t images() const { return static_cast<int64_t>(similarity.size()); }
  // Fills layer_statistic and theta from similarity, decision_scales and
  // demanding_fraction (InvalidArgumentError when no decision scale is profiled).
  void derive_theta();

  // Throws InvalidArgumentError naming both geometries when made for another model.
  void check_matches(const PolicyContext& context) const;

  std::string to_json_text() const;
  // FormatError naming `source` for anything malformed (shapes, non-finite values).
  static AmsKvCalibration from_json_text(const std::string& text, const std::string& source);
  void save(const std::string& path) const;
  static AmsKvCalibration load(const std::string& path);  // FileError / FormatError
};

// The file name of a bundle's AMS-KV calibration.
inline constexpr const char* kAmsKvCalibrationFile = "amskv_calibration.json";

}  // namespace kvs
