#pragma once
// HACK's offline head classification statistic (Qin et al., "Head-Aware KV Cache
// Compression for Efficient Visual Autoregressive Modeling", AAAI 2026, arXiv
// 2504.09261: heads are told apart offline by the variance of their attention)
// of a next-scale (VAR) model, measured with the full cache on a few calibration
// images:
//
//   m_j = 1/t_k x sum over the t_k queries of scale k of their attention on key j
//         (the per-key attention of the scale, a distribution over the c keys the
//         scale sees: the condition, every earlier scale and scale k itself),
//   variance[l][h][k] = c x sum_j m_j^2 - 1 = Var_j(m_j) / mean_j(m_j)^2,
//
// averaged over the images. A contextual head (vertical attention pattern: every
// query looks at the same few keys) piles its per-key attention on a few keys,
// a high variance; a structural head (diagonal pattern: each query looks at its
// own spatial counterparts) spreads it evenly, a low one. Dividing by the mean
// squared makes scales of different sizes comparable (within one scale it ranks
// the heads as the plain variance does). Written by `kvstudio-cli calibrate
// --policy hack` to hack_calibration.json in the bundle; torch-free.
#include <cstdint>
#include <string>
#include <vector>

namespace kvs {

struct PolicyContext;

struct HeadVarianceProfile {
  std::string model;  // the bundle's name when calibrated
  int64_t layers = 0, heads = 0;
  std::vector<int64_t> unit_tokens;  // tokens per scale (1, 4, 9, ...)
  std::vector<int64_t> classes;      // the calibration images' classes
  uint64_t seed = 0;
  double cfg = 0;
  int64_t samples = 0;           // images averaged
  std::vector<double> variance;  // [layers][heads][scales]

  int64_t scales() const { return static_cast<int64_t>(unit_tokens.size()); }
  double variance_at(int64_t layer, int64_t head, int64_t scale) const;
  double& variance_at(int64_t layer, int64_t head, int64_t scale);
  // The head's classification score: the mean variance over scales 1..K-1 (scale
  // 0's single query has no pattern to speak of).
  double score(int64_t layer, int64_t head) const;
  // The `count` heads of highest score are contextual, the others structural;
  // ties go to the lower (layer, head) index. A flag per [layer][head].
  std::vector<uint8_t> contextual_heads(int64_t count) const;

  // Throws InvalidArgumentError when the profile was made for another geometry.
  void check_matches(const PolicyContext& context) const;

  std::string to_json_text() const;
  // FormatError naming `source` for anything malformed (shapes, negative or
  // non-finite variances).
  static HeadVarianceProfile from_json_text(const std::string& text, const std::string& source);
  void save(const std::string& path) const;
  static HeadVarianceProfile load(const std::string& path);  // FileError / FormatError

  // Every head alike (all variances 0): a stand-in of the right geometry, used to
  // check a policy's parameters before the real calibration exists.
  static HeadVarianceProfile uniform(const PolicyContext& context);
};

// The file name of a bundle's HACK calibration.
inline constexpr const char* kHeadVarianceProfileFile = "hack_calibration.json";

}  // namespace kvs
