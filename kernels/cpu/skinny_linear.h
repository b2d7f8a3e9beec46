#pragma once
// y = x · wᵀ for a few rows of x: the matrix-vector products of a decode step.
//
// A decode step of a raster model multiplies every weight matrix by one token per
// batch row (two with CFG), so each weight is read once per step and used for a
// handful of multiply-adds: the step is bound by how fast the weights stream from
// memory. LibTorch's CPU GEMM is tuned for large products; measured on the
// 2-core AVX-512 machines the project builds on, a [2, 2048] x [2048, 5632]ᵀ
// product streams 8 GB/s of f32 and 19 GB/s of bf16 weights out of the ~43 GB/s
// the memory delivers. These kernels read each weight row once, multiply it
// with every row of x held in registers, and accumulate in f32, so a step runs
// near the memory's speed.
//
// The header is torch-free (plain pointers, like ragged_attention.h); the ATen
// entry point that picks this kernel or falls back to at::linear is
// kernels/linear.h.
#include <cstdint>

namespace kvs::kernels {

// The most rows of x one call takes: every row keeps an accumulator per output
// in a vector register, and 16 rows still fit the 32 AVX-512 registers (the AVX2
// path blocks them 4 at a time in its 16).
constexpr int64_t kSkinnyLinearMaxRows = 16;

// The instruction sets the kernels are written for, chosen at run time: nothing
// is compiled for more than the x86-64 baseline except these functions, which
// carry their own target attributes and run only on a CPU that reports the
// features. AVX-512 needs F, BW and VL (and uses the BF16 dot product where the
// CPU has it); AVX2 needs AVX2 and FMA (Intel since Haswell, AMD since Zen:
// the desktop and laptop CPUs without AVX-512). `none`: the caller uses its
// general GEMM.
enum class SkinnyLinearIsa { none, avx2, avx512 };

// The best path this CPU runs.
SkinnyLinearIsa skinny_linear_best_isa();
// Whether this CPU runs `isa` (`none` always).
bool skinny_linear_isa_supported(SkinnyLinearIsa isa);
// The path the kernels take: the best one, unless KVSTUDIO_CPU_DECODE_KERNEL in
// the environment names another (`avx2`, `avx512`; one this CPU lacks falls back
// to the best it has, never to an illegal instruction) or set_skinny_linear_isa
// changed it.
SkinnyLinearIsa skinny_linear_isa();
// Chooses the path for the whole process (tests and benchmarks compare them);
// false, and nothing changed, when this CPU lacks it.
bool set_skinny_linear_isa(SkinnyLinearIsa isa);
// "AVX-512", "AVX2", "none".
const char* skinny_linear_isa_name(SkinnyLinearIsa isa);
// Parses a path's name as the environment switch spells it ("avx512", "avx2",
// "none"); false for any other text.
bool parse_skinny_linear_isa(const char* text, SkinnyLinearIsa& isa);

// Whether the kernels run on this CPU (the chosen path is not `none`): f32 and
// bf16 take the same path. False elsewhere: the caller uses its general GEMM.
bool skinny_linear_f32_available();
bool skinny_linear_bf16_available();
// Whether the bf16 kernel uses the AVX-512 BF16 dot-product instruction (for
// reports): only on the AVX-512 path of a CPU that has it; the AVX2 path and
// AVX-512 without it widen bf16 to f32 in registers.
bool skinny_linear_bf16_native();

// Whether this CPU multiplies bf16 matrices in AMX tiles and Linux lets this
// process use them (the permission LibTorch's oneDNN asks for itself). Where it
// does, oneDNN's AMX matmul (at::linear) is at least as fast as the bf16 kernel
// above kSkinnyLinearBf16RowsBesideAmx rows: the kernel's dot-product
// instruction does 32 multiply-adds where an AMX tile multiply does 16 rows of
// 512, so past a batch of one (two rows with CFG) the kernel stops keeping up
// with the weights' stream. Measured on a 2-core Sapphire Rapids Xeon (all of
// LlamaGen-B's projections with every layer's own weights, so they stream from
// memory as in a run; two threads; per decode step, kernel / oneDNN): 2 rows
// 17.4 / 20.5 ms, 4 rows 26.0 / 20.2, 8 rows 26.2 / 18.8, 16 rows 19.7 / 18.9;
// end to end (one pair of runs), a batch of 8 (16 rows) of LlamaGen-B@384 ran
// 9 % faster with the full cache and 21 % faster with LineAR at 1/6 on oneDNN.
// f32 has no AMX path: there the kernel is faster at every row count (2 rows
// 22.0 / 23.5 ms, 16 rows 39.6 / 52.8).
bool cpu_has_amx_bf16();
constexpr int64_t kSkinnyLinearBf16RowsBesideAmx = 2;

// y[m * y_stride + n] = sum_k x[m * x_stride + k] * w[n * in_features + k] for
// m in [0, rows), n in [out_begin, out_end); w holds whole rows of in_features
// values (row-major [out_features, in_features]). Sums are f32. rows must be in
// [1, kSkinnyLinearMaxRows]. The caller splits [0, out_features) between threads.
// Requires skinny_linear_f32_available().
void skinny_linear_f32(const float* x, int64_t rows, int64_t x_stride, int64_t in_features, const float* w,
                       int64_t out_begin, int64_t out_end, float* y, int64_t y_stride);

// The same over bf16 values (raw uint16_t bit patterns); each f32 sum is rounded
// to bf16 to nearest even, as LibTorch rounds a bf16 matmul's f32 accumulator.
// Requires skinny_linear_bf16_available().
void skinny_linear_bf16(const uint16_t* x, int64_t rows, int64_t x_stride, int64_t in_features, const uint16_t* w,
                        int64_t out_begin, int64_t out_end, uint16_t* y, int64_t y_stride);

// skinny_linear_bf16 as it runs on a CPU without the BF16 dot-product instruction
// (x and the weights widened to f32) on the chosen path, whatever this CPU has:
// tests compare it too.
void skinny_linear_bf16_widened(const uint16_t* x, int64_t rows, int64_t x_stride, int64_t in_features,
                                const uint16_t* w, int64_t out_begin, int64_t out_end, uint16_t* y, int64_t y_stride);

}  // namespace kvs::kernels
