#pragma once
// AMS-KV's inter-scale key similarity (Eq. 3, as the engine computes it), shared
// by the policy, which decides with it online, and by its offline profiling
// (`kvstudio-cli calibrate --policy amskv`), which must measure exactly what the
// policy compares with theta:
//   S = -mean((k_i - resize(k_{i-1}))^2)
// over all heads, tokens and dimensions of one row (keys as cached, scale i-1's
// square key map resized bilinearly to scale i's side, align_corners=false),
// computed in float32. The negated mean squared difference rather than the
// paper's printed -||.||_2: normalised by size, so that the paper's theta range
// (-0.007 ... -0.01, Appendix E) means the same on every scale and head count.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kvs {

// keys [R, H, T, hd] of scale i and prev [R, H, T', hd] of scale i-1 (square
// maps) -> S per row, [R] double on the CPU.
at::Tensor inter_scale_key_similarity(const at::Tensor& keys, const at::Tensor& prev);

// Remembers every layer's previous scale keys: observe() returns S per row for
// the scale just appended (NaN at the first scale, which has no predecessor, or
// when the previous scale had another row count).
class ScaleKeySimilarity {
 public:
  explicit ScaleKeySimilarity(int64_t layers) : prev_(static_cast<size_t>(layers)) {}
  // keys [rows or more, H, T, hd] of unit `unit` as cached; the first `rows` rows
  // are measured (the conditional rows of CFG pairs).
  std::vector<double> observe(int64_t layer, int64_t unit, const at::Tensor& keys, int64_t rows);

 private:
  std::vector<at::Tensor> prev_;  // per layer: the previous scale's keys of the measured rows (float32)
};

}  // namespace kvs
