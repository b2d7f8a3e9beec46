#include "kernels/cpu/skinny_linear.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/kernel_error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12's _mm512_reduce_add_ps starts from _mm256_undefined_pd(), which its own
// -Wuninitialized flags at every use; the lanes it leaves undefined are never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define KVS_SKINNY_X86 1
#if defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#else
#define KVS_SKINNY_X86 0
#endif

namespace kvs::kernels {
namespace {

[[maybe_unused]] void check_arguments(const char* kernel, const void* x, int64_t rows, int64_t x_stride,
                                      int64_t in_features, const void* w, int64_t out_begin, int64_t out_end,
                                      const void* y, int64_t y_stride) {
  auto fail = [&](const std::string& what) { throw KernelArgumentError(std::string(kernel) + ": " + what); };
  if (rows < 1 || rows > kSkinnyLinearMaxRows)
    fail("rows " + std::to_string(rows) + " outside [1, " + std::to_string(kSkinnyLinearMaxRows) + "]");
  if (in_features < 1 || x_stride < in_features) fail("in_features must be >= 1 and <= x_stride");
  if (out_begin < 0 || out_end < out_begin || y_stride < out_end) fail("outputs must lie in [0, y_stride)");
  if (x == nullptr || w == nullptr || y == nullptr) fail("missing buffer");
}

// f32 -> bf16, round to nearest even; NaN stays a (quiet) NaN.
[[maybe_unused]] uint16_t to_bf16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

#if KVS_SKINNY_X86
#define KVS_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define KVS_TARGET_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// How the work is cut: outputs [n0, n1) in groups of U (their weight rows stream
// together, which keeps several memory streams busy), rows of x in blocks of B
// (the rest in one smaller block). An output group's weight rows come from memory
// for the first block of rows and from cache for the next ones, so each weight is
// read from memory once; B x U accumulators plus U weight registers fit the 32
// ZMM registers. One or two rows (batch 1, with or without CFG) take 8 outputs at
// a time, more rows blocks of 4 x 4.
template <int V>
using Count = std::integral_constant<int, V>;

template <int U, int B, typename Outputs>
void tile(int64_t M, int64_t n0, int64_t n1, const Outputs& outputs) {
  auto rows = [&](auto u, int64_t n) {
    int64_t m = 0;
    for (; m + B <= M; m += B) outputs(Count<B>{}, u, m, n);
    const int64_t rest = M - m;
    if constexpr (B > 3)
      if (rest == 3) outputs(Count<3>{}, u, m, n);
    if constexpr (B > 2)
      if (rest == 2) outputs(Count<2>{}, u, m, n);
    if constexpr (B > 1)
      if (rest == 1) outputs(Count<1>{}, u, m, n);
  };
  int64_t n = n0;
  for (; n + U <= n1; n += U) rows(Count<U>{}, n);
  for (; n < n1; ++n) rows(Count<1>{}, n);
}

template <typename Outputs>
void tile_for_rows(int64_t M, int64_t n0, int64_t n1, const Outputs& outputs) {
  if (M <= 2) tile<8, 2>(M, n0, n1, outputs);
  else tile<4, 4>(M, n0, n1, outputs);
}

// ---- f32 x, f32 or bf16 weights, f32 FMA -------------------------------------------

// 16 weights as f32: f32 as stored; bf16 widened (a bf16 is the upper half of an f32).
KVS_TARGET_AVX512 inline __m512 load_weights(const float* p) { return _mm512_loadu_ps(p); }
KVS_TARGET_AVX512 inline __m512 load_weights(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
KVS_TARGET_AVX512 inline __m512 widen_bf16(__m256i half) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}
KVS_TARGET_AVX512 inline __m512 load_weights(const uint16_t* p) {
  return widen_bf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
KVS_TARGET_AVX512 inline __m512 load_weights(const uint16_t* p, __mmask16 mask) {
  return widen_bf16(_mm256_maskz_loadu_epi16(mask, p));
}

// out[m * out_stride + u] = x row m . weight row n + u, for B rows and U outputs.
// f32 weights, and bf16 weights on CPUs without the BF16 instructions (x then
// widened to f32 beforehand, the weights as they stream).
template <int M, int U, typename Weight>
KVS_TARGET_AVX512 void fma_outputs(const float* x, int64_t xs, int64_t K, const Weight* w, int64_t n, float* out,
                                   int64_t out_stride) {
  __m512 acc[U][M];
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) acc[u][m] = _mm512_setzero_ps();
  const Weight* wr = w + n * K;
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) wv[u] = load_weights(wr + u * K + k);
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) {
      const __m512 xv = _mm512_loadu_ps(x + m * xs + k);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) acc[u][m] = _mm512_fmadd_ps(wv[u], xv, acc[u][m]);
    }
  }
  if (k < K) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (K - k)) - 1u);
    __m512 wv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) wv[u] = load_weights(wr + u * K + k, mask);
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mask, x + m * xs + k);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) acc[u][m] = _mm512_fmadd_ps(wv[u], xv, acc[u][m]);
    }
  }
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) out[m * out_stride + u] = _mm512_reduce_add_ps(acc[u][m]);
}

// With the BF16 instructions: VDPBF16PS multiplies 32 bf16 pairs exactly and adds
// them into 16 f32 accumulators, so neither operand is widened.
template <int M, int U>
KVS_TARGET_AVX512_BF16 void bf16_native_outputs(const uint16_t* x, int64_t xs, int64_t K, const uint16_t* w, int64_t n,
                                                float* out) {
  __m512 acc[U][M];
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) acc[u][m] = _mm512_setzero_ps();
  const uint16_t* wr = w + n * K;
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512i wv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) wv[u] = _mm512_loadu_si512(wr + u * K + k);
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) {
      const __m512i xv = _mm512_loadu_si512(x + m * xs + k);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) acc[u][m] = _mm512_dpbf16_ps(acc[u][m], (__m512bh)xv, (__m512bh)wv[u]);
    }
  }
  if (k < K) {
    // Zeroed lanes contribute 0 * 0.
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (K - k)) - 1u);
    __m512i wv[U];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) wv[u] = _mm512_maskz_loadu_epi16(mask, wr + u * K + k);
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) {
      const __m512i xv = _mm512_maskz_loadu_epi16(mask, x + m * xs + k);
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) acc[u][m] = _mm512_dpbf16_ps(acc[u][m], (__m512bh)xv, (__m512bh)wv[u]);
    }
  }
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) out[m * U + u] = _mm512_reduce_add_ps(acc[u][m]);
}

bool cpu_has(bool bf16_instructions) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  return bf16_instructions ? avx512 && __builtin_cpu_supports("avx512bf16") : avx512;
}

void bf16_range(const uint16_t* x, int64_t xs, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1,
                uint16_t* y, int64_t ys, bool native) {
  std::vector<float> xf;
  if (!native) {
    xf.resize(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        const uint32_t bits = static_cast<uint32_t>(x[m * xs + k]) << 16;
        std::memcpy(&xf[static_cast<size_t>(m * K + k)], &bits, sizeof bits);
      }
  }
  tile_for_rows(M, n0, n1, [&](auto rows, auto units, int64_t m, int64_t n) {
    constexpr int B = decltype(rows)::value, U = decltype(units)::value;
    float out[B * U];
    if (native) bf16_native_outputs<B, U>(x + m * xs, xs, K, w, n, out);
    else fma_outputs<B, U>(xf.data() + m * K, K, K, w, n, out, U);
    for (int r = 0; r < B; ++r)
      for (int u = 0; u < U; ++u) y[(m + r) * ys + n + u] = to_bf16(out[r * U + u]);
  });
}

void f32_range(const float* x, int64_t xs, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y,
               int64_t ys) {
  tile_for_rows(M, n0, n1, [&](auto rows, auto units, int64_t m, int64_t n) {
    fma_outputs<decltype(rows)::value, decltype(units)::value>(x + m * xs, xs, K, w, n, y + m * ys + n, ys);
  });
}

#endif  // KVS_SKINNY_X86

}  // namespace

#if KVS_SKINNY_X86

bool skinny_linear_f32_available() {
  static const bool available = cpu_has(false);
  return available;
}

bool skinny_linear_bf16_available() { return skinny_linear_f32_available(); }

bool skinny_linear_bf16_native() {
  static const bool native = cpu_has(true);
  return native;
}

bool cpu_has_amx_bf16() {
#if defined(__linux__)
  static const bool amx = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool tile = (edx >> 24) & 1u, bf16 = (edx >> 22) & 1u;
    if (!tile || !bf16) return false;
    // Linux hands out the tile registers' state only on request
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); oneDNN asks the same way, and
    // without it oneDNN runs its AVX-512 path, which the kernel beats.
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return amx;
#else
  return false;
#endif
}

void skinny_linear_f32(const float* x, int64_t rows, int64_t x_stride, int64_t in_features, const float* w,
                       int64_t out_begin, int64_t out_end, float* y, int64_t y_stride) {
  check_arguments("skinny_linear_f32", x, rows, x_stride, in_features, w, out_begin, out_end, y, y_stride);
  if (!skinny_linear_f32_available()) throw KernelArgumentError("skinny_linear_f32: this CPU lacks AVX-512");
  f32_range(x, x_stride, rows, in_features, w, out_begin, out_end, y, y_stride);
}

void skinny_linear_bf16(const uint16_t* x, int64_t rows, int64_t x_stride, int64_t in_features, const uint16_t* w,
                        int64_t out_begin, int64_t out_end, uint16_t* y, int64_t y_stride) {
  check_arguments("skinny_linear_bf16", x, rows, x_stride, in_features, w, out_begin, out_end, y, y_stride);
  if (!skinny_linear_bf16_available()) throw KernelArgumentError("skinny_linear_bf16: this CPU lacks AVX-512");
  bf16_range(x, x_stride, rows, in_features, w, out_begin, out_end, y, y_stride, skinny_linear_bf16_native());
}

void skinny_linear_bf16_widened(const uint16_t* x, int64_t rows, int64_t x_stride, int64_t in_features,
                                const uint16_t* w, int64_t out_begin, int64_t out_end, uint16_t* y, int64_t y_stride) {
  check_arguments("skinny_linear_bf16", x, rows, x_stride, in_features, w, out_begin, out_end, y, y_stride);
  if (!skinny_linear_bf16_available()) throw KernelArgumentError("skinny_linear_bf16: this CPU lacks AVX-512");
  bf16_range(x, x_stride, rows, in_features, w, out_begin, out_end, y, y_stride, false);
}

#else  // not x86-64: the callers fall back to their general GEMM.

bool skinny_linear_f32_available() { return false; }
bool skinny_linear_bf16_available() { return false; }
bool skinny_linear_bf16_native() { return false; }
bool cpu_has_amx_bf16() { return false; }
void skinny_linear_f32(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t) {
  throw KernelArgumentError("skinny_linear_f32: needs an x86-64 CPU with AVX-512");
}
void skinny_linear_bf16(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*, int64_t, int64_t, uint16_t*,
                        int64_t) {
  throw KernelArgumentError("skinny_linear_bf16: needs an x86-64 CPU with AVX-512");
}
void skinny_linear_bf16_widened(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*, int64_t, int64_t,
                                uint16_t*, int64_t) {
  throw KernelArgumentError("skinny_linear_bf16: needs an x86-64 CPU with AVX-512");
}

#endif

}  // namespace kvs::kernels
