#include "kernels/cpu/skinny_linear.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/avx2_loads.h"
#include "kernels/cpu/float_dot.h"
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

// The AVX2 path has 16 YMM registers: one or two rows take 6 outputs at a time
// (12 accumulators, the rows' x and one weight register), more rows blocks of
// 3 rows x 4 outputs (12 accumulators, 3 x registers, one weight). Measured on
// a 2-core AMD EPYC (AVX2, FMA, no AVX-512), one thread, LlamaGen-B's 60
// projections per step at 16 rows: 62 ms in blocks of 3 rows x 4 outputs,
// against 93 ms for 4 rows x 2 outputs (fewer independent accumulators leave
// the FMA units waiting on their latency), 80 ms for 3 x 3 and 69 ms for
// 4 rows x 3 outputs.
template <typename Outputs>
void tile_for_rows_avx2(int64_t M, int64_t n0, int64_t n1, const Outputs& outputs) {
  if (M <= 2) tile<6, 2>(M, n0, n1, outputs);
  else tile<4, 3>(M, n0, n1, outputs);
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

// ---- AVX2 + FMA: f32 x, f32 or bf16 weights -----------------------------------------

#define KVS_TARGET_AVX2 __attribute__((target("avx2,fma")))

KVS_TARGET_AVX2 inline float sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One core alone does not keep enough of the weights' cache lines in flight for
// the hardware prefetcher to reach the memory's speed: while a group of U
// weight rows is summed, each row's line at the same offset in the next
// group's rows is prefetched, once per 64-byte line. Measured on a 2-core AMD
// EPYC (AVX2, no AVX-512), one thread, 85M weights at 2 rows: bf16 20.3 ->
// 16.7 ms, f32 25.5 -> 23.1 ms. A prefetch past the matrix's end (the last
// group) does not fault.
template <typename Weight>
constexpr int64_t kPrefetchEvery = 64 / static_cast<int64_t>(sizeof(Weight));
inline void prefetch_next_group(const void* p) { __builtin_prefetch(p, 0, 3); }

// out[m * out_stride + u] = x row m . weight row n + u, for M rows and U outputs:
// the x rows of a step of 8 stay in registers while the U weight rows stream
// through one register each. The last K % 8 products are summed in scalar code.
template <int M, int U, typename Weight>
KVS_TARGET_AVX2 void fma_outputs_avx2(const float* x, int64_t xs, int64_t K, const Weight* w, int64_t n, float* out,
                                      int64_t out_stride) {
  __m256 acc[U][M];
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) acc[u][m] = _mm256_setzero_ps();
  const Weight* wr = w + n * K;
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 xv[M];
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) xv[m] = _mm256_loadu_ps(x + m * xs + k);
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) {
      if (k % kPrefetchEvery<Weight> == 0) prefetch_next_group(wr + (U + u) * K + k);
      const __m256 wv = load8_as_f32(wr + u * K + k);
#pragma GCC unroll 16
      for (int m = 0; m < M; ++m) acc[u][m] = _mm256_fmadd_ps(wv, xv[m], acc[u][m]);
    }
  }
  float tail[U][M] = {};
  for (; k < K; ++k)
    for (int u = 0; u < U; ++u) {
      const float wk = as_float32(wr[u * K + k]);
      for (int m = 0; m < M; ++m) tail[u][m] += wk * x[m * xs + k];
    }
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) out[m * out_stride + u] = sum8(acc[u][m]) + tail[u][m];
}

// bf16 weights, 16 at a time: interleaving a 256-bit load with zeros puts each
// bf16 in the upper half of a 32-bit lane, which is its f32 value, in one
// instruction per 8 weights (the zero-extension and shift above take two). The
// unpacks work within 128-bit lanes, so the low register holds weights
// k+0..3 and k+8..11 and the high one k+4..7 and k+12..15; x is stored in
// that order beforehand (permute_for_bf16_unpack), and a dot product does not
// care about the order of its terms.
template <int M, int U>
KVS_TARGET_AVX2 void bf16_unpack_outputs_avx2(const float* x, int64_t xs, int64_t K, const uint16_t* w, int64_t n,
                                              float* out, int64_t out_stride) {
  __m256 acc[U][M];
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) acc[u][m] = _mm256_setzero_ps();
  const uint16_t* wr = w + n * K;
  const __m256i zero = _mm256_setzero_si256();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) {
      if (k % kPrefetchEvery<uint16_t> == 0) prefetch_next_group(wr + (U + u) * K + k);
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wr + u * K + k));
      const __m256 lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, wv));
      const __m256 hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, wv));
#pragma GCC unroll 16
      for (int m = 0; m < M; ++m) {
        acc[u][m] = _mm256_fmadd_ps(lo, _mm256_loadu_ps(x + m * xs + k), acc[u][m]);
        acc[u][m] = _mm256_fmadd_ps(hi, _mm256_loadu_ps(x + m * xs + k + 8), acc[u][m]);
      }
    }
  }
  float tail[U][M] = {};
  for (; k < K; ++k)
    for (int u = 0; u < U; ++u) {
      const float wk = as_float32(wr[u * K + k]);
      for (int m = 0; m < M; ++m) tail[u][m] += wk * x[m * xs + k];
    }
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 16
    for (int m = 0; m < M; ++m) out[m * out_stride + u] = sum8(acc[u][m]) + tail[u][m];
}

// x's values in each whole block of 16 in the order bf16_unpack_outputs_avx2
// reads its weights: 0..3, 8..11, 4..7, 12..15; the tail as it is.
void permute_for_bf16_unpack(float* row, int64_t K) {
  float block[16];
  for (int64_t k = 0; k + 16 <= K; k += 16) {
    for (int i = 0; i < 4; ++i) {
      block[i] = row[k + i];
      block[4 + i] = row[k + 8 + i];
      block[8 + i] = row[k + 4 + i];
      block[12 + i] = row[k + 12 + i];
    }
    std::memcpy(row + k, block, sizeof block);
  }
}

// ---- dispatch ------------------------------------------------------------------------

bool cpu_has_avx512(bool bf16_instructions) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  return bf16_instructions ? avx512 && __builtin_cpu_supports("avx512bf16") : avx512;
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void bf16_range(SkinnyLinearIsa isa, const uint16_t* x, int64_t xs, int64_t M, int64_t K, const uint16_t* w, int64_t n0,
                int64_t n1, uint16_t* y, int64_t ys, bool native) {
  std::vector<float> xf;
  if (!native) {
    xf.resize(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) xf[static_cast<size_t>(m * K + k)] = as_float32(x[m * xs + k]);
  }
  auto store = [&](const float* out, int B, int U, int64_t m, int64_t n) {
    for (int r = 0; r < B; ++r)
      for (int u = 0; u < U; ++u) y[(m + r) * ys + n + u] = to_bf16(out[r * U + u]);
  };
  if (isa == SkinnyLinearIsa::avx2) {
    // One or two rows (batch 1): the weights' widening is most of the work per
    // weight, so it takes the one-instruction unpack; more rows keep their x in
    // registers (the unpack's two halves of x per row would not fit beside
    // the accumulators) and widen with the shift.
    const bool unpack = M <= 2;
    if (unpack)
      for (int64_t m = 0; m < M; ++m) permute_for_bf16_unpack(xf.data() + m * K, K);
    tile_for_rows_avx2(M, n0, n1, [&](auto rows, auto units, int64_t m, int64_t n) {
      constexpr int B = decltype(rows)::value, U = decltype(units)::value;
      float out[B * U];
      if (unpack) bf16_unpack_outputs_avx2<B, U>(xf.data() + m * K, K, K, w, n, out, U);
      else fma_outputs_avx2<B, U>(xf.data() + m * K, K, K, w, n, out, U);
      store(out, B, U, m, n);
    });
    return;
  }
  tile_for_rows(M, n0, n1, [&](auto rows, auto units, int64_t m, int64_t n) {
    constexpr int B = decltype(rows)::value, U = decltype(units)::value;
    float out[B * U];
    if (native) bf16_native_outputs<B, U>(x + m * xs, xs, K, w, n, out);
    else fma_outputs<B, U>(xf.data() + m * K, K, K, w, n, out, U);
    store(out, B, U, m, n);
  });
}

void f32_range(SkinnyLinearIsa isa, const float* x, int64_t xs, int64_t M, int64_t K, const float* w, int64_t n0,
               int64_t n1, float* y, int64_t ys) {
  if (isa == SkinnyLinearIsa::avx2) {
    tile_for_rows_avx2(M, n0, n1, [&](auto rows, auto units, int64_t m, int64_t n) {
      fma_outputs_avx2<decltype(rows)::value, decltype(units)::value>(x + m * xs, xs, K, w, n, y + m * ys + n, ys);
    });
    return;
  }
  tile_for_rows(M, n0, n1, [&](auto rows, auto units, int64_t m, int64_t n) {
    fma_outputs<decltype(rows)::value, decltype(units)::value>(x + m * xs, xs, K, w, n, y + m * ys + n, ys);
  });
}

#endif  // KVS_SKINNY_X86

}  // namespace

#if KVS_SKINNY_X86

SkinnyLinearIsa skinny_linear_best_isa() {
  static const SkinnyLinearIsa best = cpu_has_avx512(false) ? SkinnyLinearIsa::avx512
                                      : cpu_has_avx2()      ? SkinnyLinearIsa::avx2
                                                            : SkinnyLinearIsa::none;
  return best;
}

bool skinny_linear_isa_supported(SkinnyLinearIsa isa) {
  switch (isa) {
    case SkinnyLinearIsa::none: return true;
    case SkinnyLinearIsa::avx2: return cpu_has_avx2();
    case SkinnyLinearIsa::avx512: return cpu_has_avx512(false);
  }
  return false;
}

#else

SkinnyLinearIsa skinny_linear_best_isa() { return SkinnyLinearIsa::none; }
bool skinny_linear_isa_supported(SkinnyLinearIsa isa) { return isa == SkinnyLinearIsa::none; }

#endif

namespace {

SkinnyLinearIsa isa_from_environment() {
  SkinnyLinearIsa isa = skinny_linear_best_isa();
  const char* value = std::getenv("KVSTUDIO_CPU_DECODE_KERNEL");
  SkinnyLinearIsa named = isa;
  // "off" / "0" switch the whole decode kernel off (kernels/linear.h); an ISA
  // this CPU lacks keeps the best one it has.
  if (value != nullptr && parse_skinny_linear_isa(value, named) && skinny_linear_isa_supported(named)) isa = named;
  return isa;
}

std::atomic<SkinnyLinearIsa>& chosen_isa() {
  static std::atomic<SkinnyLinearIsa> isa{isa_from_environment()};
  return isa;
}

}  // namespace

SkinnyLinearIsa skinny_linear_isa() { return chosen_isa().load(); }

bool set_skinny_linear_isa(SkinnyLinearIsa isa) {
  if (!skinny_linear_isa_supported(isa)) return false;
  chosen_isa().store(isa);
  return true;
}

const char* skinny_linear_isa_name(SkinnyLinearIsa isa) {
  switch (isa) {
    case SkinnyLinearIsa::avx512: return "AVX-512";
    case SkinnyLinearIsa::avx2: return "AVX2";
    case SkinnyLinearIsa::none: break;
  }
  return "none";
}

bool parse_skinny_linear_isa(const char* text, SkinnyLinearIsa& isa) {
  if (text == nullptr) return false;
  const std::string name(text);
  if (name == "avx512") isa = SkinnyLinearIsa::avx512;
  else if (name == "avx2") isa = SkinnyLinearIsa::avx2;
  else if (name == "none") isa = SkinnyLinearIsa::none;
  else return false;
  return true;
}

bool skinny_linear_f32_available() { return skinny_linear_isa() != SkinnyLinearIsa::none; }
bool skinny_linear_bf16_available() { return skinny_linear_f32_available(); }

#if KVS_SKINNY_X86

bool skinny_linear_bf16_native() {
  static const bool native = cpu_has_avx512(true);
  return native && skinny_linear_isa() == SkinnyLinearIsa::avx512;
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
  const SkinnyLinearIsa isa = skinny_linear_isa();
  if (isa == SkinnyLinearIsa::none) throw KernelArgumentError("skinny_linear_f32: this CPU lacks AVX2 and FMA");
  f32_range(isa, x, x_stride, rows, in_features, w, out_begin, out_end, y, y_stride);
}

void skinny_linear_bf16(const uint16_t* x, int64_t rows, int64_t x_stride, int64_t in_features, const uint16_t* w,
                        int64_t out_begin, int64_t out_end, uint16_t* y, int64_t y_stride) {
  check_arguments("skinny_linear_bf16", x, rows, x_stride, in_features, w, out_begin, out_end, y, y_stride);
  const SkinnyLinearIsa isa = skinny_linear_isa();
  if (isa == SkinnyLinearIsa::none) throw KernelArgumentError("skinny_linear_bf16: this CPU lacks AVX2 and FMA");
  bf16_range(isa, x, x_stride, rows, in_features, w, out_begin, out_end, y, y_stride, skinny_linear_bf16_native());
}

void skinny_linear_bf16_widened(const uint16_t* x, int64_t rows, int64_t x_stride, int64_t in_features,
                                const uint16_t* w, int64_t out_begin, int64_t out_end, uint16_t* y, int64_t y_stride) {
  check_arguments("skinny_linear_bf16", x, rows, x_stride, in_features, w, out_begin, out_end, y, y_stride);
  const SkinnyLinearIsa isa = skinny_linear_isa();
  if (isa == SkinnyLinearIsa::none) throw KernelArgumentError("skinny_linear_bf16: this CPU lacks AVX2 and FMA");
  bf16_range(isa, x, x_stride, rows, in_features, w, out_begin, out_end, y, y_stride, false);
}

#else  // not x86-64: the callers fall back to their general GEMM.

bool skinny_linear_bf16_native() { return false; }
bool cpu_has_amx_bf16() { return false; }
void skinny_linear_f32(const float*, int64_t, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t) {
  throw KernelArgumentError("skinny_linear_f32: needs an x86-64 CPU with AVX2 and FMA");
}
void skinny_linear_bf16(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*, int64_t, int64_t, uint16_t*,
                        int64_t) {
  throw KernelArgumentError("skinny_linear_bf16: needs an x86-64 CPU with AVX2 and FMA");
}
void skinny_linear_bf16_widened(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*, int64_t, int64_t,
                                uint16_t*, int64_t) {
  throw KernelArgumentError("skinny_linear_bf16: needs an x86-64 CPU with AVX2 and FMA");
}

#endif

}  // namespace kvs::kernels
