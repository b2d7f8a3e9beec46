#pragma once
// Eight float32 values in a YMM register, read from float32 or from bf16 memory,
// for the CPU kernels' AVX2 builds (the decode kernel, the ragged attention).
// A bf16 is the upper half of a float32: zero-extended and shifted, it is widened
// exactly with AVX2 alone, no F16C or BF16 instruction needed. Only functions
// compiled with target("avx2,fma") may call these, on CPUs that report AVX2.
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace kvs::kernels {

__attribute__((target("avx2,fma"))) inline __m256 load8_as_f32(const float* p) { return _mm256_loadu_ps(p); }

__attribute__((target("avx2,fma"))) inline __m256 load8_as_f32(const uint16_t* p) {
  const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
}

}  // namespace kvs::kernels
#endif
