#pragma once
// Scale-to-scale attention of a next-scale (VAR) model, measured offline on a small
// calibration set with the full cache: HeatKV's beta (Eq. 2) per layer and head,
//   beta[l][h][k1][k2] = 1/t_k1 x sum over the t_k1 queries of scale k1 of their
//                        attention on the tokens of scale k2 (0 for k2 > k1),
// averaged over the calibration images (so every row k1 sums to 1), and the scores
// derived from it (CAS, Eq. 3; S-CAS, Eq. 4). Written by `kvstudio-cli calibrate`
// to heatkv_calibration.json in (or beside) the bundle; torch-free.
#include <cstdint>
#include <string>
#include <vector>

namespace kvs {

struct PolicyContext;

struct ScaleAttentionProfile {
  std::string model;  // the bundle's name when calibrated
  int64_t layers = 0, heads = 0;
  std::vector<int64_t> unit_tokens;  // tokens per scale (1, 4, 9, ...)
  std::vector<int64_t> classes;      // the calibration images' classes
  uint64_t seed = 0;
  double cfg = 0;
  int64_t samples = 0;       // images averaged
  std::vector<double> beta;  // [layers][heads][scales][scales]

  int64_t scales() const { return static_cast<int64_t>(unit_tokens.size()); }
  double beta_at(int64_t layer, int64_t head, int64_t k1, int64_t k2) const;
  double& beta_at(int64_t layer, int64_t head, int64_t k1, int64_t k2);
  // Eq. 3 (0-based scales): mean over the non-sink cached scales tau in [sinks,
  // K-2] of beta[K-1][tau], divided by K - sinks as in the paper.
  double cas(int64_t layer, int64_t head, int64_t sinks) const;
  // Eq. 4 (0-based source scale i in [sinks, K-2]): the mean over the later scales
  // tau in (i, K-1] of beta[tau][i].
  double scas(int64_t layer, int64_t head, int64_t source) const;

  // Throws InvalidArgumentError when the profile was made for another geometry.
  void check_matches(const PolicyContext& context) const;

  std::string to_json_text() const;
  // FormatError naming `source` for anything malformed (shapes, negative mass, rows
  // that do not sum to 1).
  static ScaleAttentionProfile from_json_text(const std::string& text, const std::string& source);
  void save(const std::string& path) const;
  static ScaleAttentionProfile load(const std::string& path);  // FileError / FormatError

  // Every scale attends uniformly to every earlier token (per-token mass): a
  // stand-in with the right geometry, used to check a policy's parameters before
  // the real calibration exists.
  static ScaleAttentionProfile uniform(const PolicyContext& context);
};

// The file name of a bundle's calibration.
inline constexpr const char* kScaleAttentionProfileFile = "heatkv_calibration.json";

}  // namespace kvs
