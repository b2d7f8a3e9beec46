#pragma once
// ScaleKV's Attention Selectivity Index (Li, Chen, Yang, Hwang 2025, "Memory-
// Efficient Visual Autoregressive Modeling with Scale-Aware KV Cache
// Compression", §3.3 Eq. 2-3) of every layer at every scale of a next-scale (VAR)
// model, measured with the full cache on a few calibration images
// (AttentionSelectivityMeter), and the drafter / refiner split it induces.
//
//   ASI(l, k) = E_i[ sum_{j in C_k} alpha_ij ] x E_i[ TopKSum_K'{ alpha_ij : j in P_{k-1} } ]
//               (current attention ratio)       (history top-K' ratio)
//
// E_i runs over the queries of scale k (and, here, over the heads and the
// calibration images: the paper's alpha has no head index). Z(l, k) normalises
// ASI within scale k over the layers (Eq. 3); the drafters are the pairs of
// lowest Z. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

namespace kvs {

struct PolicyContext;

struct LayerSelectivityProfile {
  std::string model;  // the model it was measured on (informational)
  int64_t layers = 0;
  std::vector<int64_t> unit_tokens;  // tokens per scale (1, 4, 9, ...)
  int64_t top_k = 0;                 // K' of the history term
  int64_t samples = 0;               // calibration images
  std::vector<int64_t> classes;      // their classes (empty for a stand-in)
  uint64_t seed = 0;                 // sampling seed and CFG scale of the calibration run
  double cfg = 0;
  std::vector<double> current_ratio;  // [layer][scale]: E_i sum over C_k of alpha_ij
  std::vector<double> history_top_k;  // [layer][scale]: E_i of the K' largest alpha_ij over P_{k-1}

  int64_t scales() const { return static_cast<int64_t>(unit_tokens.size()); }
  double asi(int64_t layer, int64_t scale) const;  // Eq. 2: the product of the two terms
  // Eq. 3: (ASI(l, k) - mu_k) / (sigma_k + eps) over the layers of scale k
  // (population standard deviation, eps = 1e-8).
  double z_score(int64_t layer, int64_t scale) const;
  // D (Eq. 3): the `count` pairs (layer, scale), scale among `scales`, of lowest
  // Z; ties go to the lower scale, then the lower layer. Returns a flag per
  // [layer][scale] (layer-major, scales() columns).
  std::vector<uint8_t> drafters(const std::vector<int64_t>& scales, int64_t count) const;

  // Throws InvalidArgumentError when the profile was measured on another geometry.
  void check_matches(const PolicyContext& context) const;
  // Every layer alike at every scale (all Z = 0): a stand-in of the right
  // geometry that checks a policy's parameters before the calibration exists.
  static LayerSelectivityProfile uniform(const PolicyContext& context, int64_t top_k);

  // The calibration file kept in a model bundle (kScaleKvCalibrationFile): JSON
  // with the two ASI terms per [layer][scale]. A file that is not one, or whose
  // numbers cannot be attention ratios, is a FormatError naming `source`.
  std::string to_json_text() const;
  static LayerSelectivityProfile from_json_text(const std::string& text, const std::string& source);
  void save(const std::string& path) const;                      // written atomically
  static LayerSelectivityProfile load(const std::string& path);  // FileError / FormatError
};

// Where `kvstudio-cli calibrate --policy scalekv` stores it in a bundle.
inline constexpr const char* kScaleKvCalibrationFile = "scalekv_calibration.json";

}  // namespace kvs
