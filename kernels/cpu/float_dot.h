#pragma once
// The float32 dot product of the CPU kernels (ragged attention, the scoring twins).
#include <cstdint>

namespace kvs::kernels {

// GCC may not reorder a float reduction without -ffast-math, so a plain `sum +=
// a[i] * b[i]` loop stays scalar. Eight independent partial sums (one per SIMD
// lane) give the vectoriser a straight-line body it turns into vector FMAs, and
// the fixed summation order keeps results independent of the thread count.
constexpr int64_t kDotLanes = 8;

inline float float_dot(const float* a, const float* b, int64_t n) {
  float acc[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes)
    for (int64_t l = 0; l < kDotLanes; ++l) acc[l] += a[i + l] * b[i + l];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

}  // namespace kvs::kernels
