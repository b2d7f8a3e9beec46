#pragma once
// at::linear with the CPU decode kernel: the engine's models call this for every
// projection, so that a decode step (a few rows of activations against each
// weight matrix) streams the weights at the memory's speed on the CPU
// (kernels/cpu/skinny_linear.h) while everything else — prefill, training,
// CUDA, f16, more rows than the kernel takes — is at::linear unchanged.
#include <ATen/core/Tensor.h>

namespace kvs::kernels {

// input [..., in_features], weight [out_features, in_features], bias (optional)
// [out_features] -> [..., out_features], as at::linear. The kernel runs when the
// tensors are on the CPU, input and weight are both f32 or both bf16, input has at
// most kSkinnyLinearMaxRows rows (the product of its leading sizes), no gradient
// is being recorded for them, the CPU has AVX2 and FMA (or AVX-512), and the
// kernel is enabled;
// bf16 with more than kSkinnyLinearBf16RowsBesideAmx rows stays at::linear on a
// CPU with AMX, where oneDNN's tile matmul is faster.
at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias = {});

// Whether linear() would take the decode kernel for this call (for tests and reports).
bool linear_uses_decode_kernel(const at::Tensor& input, const at::Tensor& weight);

// Switches the decode kernel on or off for the whole process (on by default;
// KVSTUDIO_CPU_DECODE_KERNEL=off in the environment starts it off, =avx2 or
// =avx512 picks that path where the CPU has it, skinny_linear.h). Off, linear()
// is at::linear: benchmarks compare the two in one run this way.
void set_decode_kernel_enabled(bool enabled);
bool decode_kernel_enabled();

// A line for reports: which CPU decode kernel runs ("AVX-512 BF16", "AVX-512",
// "AVX2", "off", "none (chosen)", "not available on this CPU").
const char* decode_kernel_description(bool bf16);

}  // namespace kvs::kernels
