#pragma once
// The float32 dot product of the CPU kernels (ragged attention, the scoring twins).
#include <cstdint>
#include <cstring>

namespace kvs::kernels {

// GCC may not reorder a float reduction without -ffast-math, so a plain `sum +=
// a[i] * b[i]` loop stays scalar. Eight independent partial sums (one per SIMD
// lane) give the vectoriser a straight-line body it turns into vector FMAs, and
// the fixed summation order keeps results independent of the thread count.
constexpr int64_t kDotLanes = 8;

// An element as float32: float32 as stored, bf16 (the upper half of a float32)
// widened exactly, with a shift the vectoriser turns into a zero-extension and a
// shift per eight elements.
inline float as_float32(float v) { return v; }
inline float as_float32(uint16_t bf16) {
  const uint32_t bits = static_cast<uint32_t>(bf16) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// b may be bf16: its elements are widened as they are read, and the sum is the
// one over b widened beforehand, bit for bit.
template <typename B>
inline float float_dot(const float* a, const B* b, int64_t n) {
  float acc[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes)
    for (int64_t l = 0; l < kDotLanes; ++l) acc[l] += a[i + l] * as_float32(b[i + l]);
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * as_float32(b[i]);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

}  // namespace kvs::kernels
