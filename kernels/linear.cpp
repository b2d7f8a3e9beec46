#include "kernels/linear.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kernels/cpu/skinny_linear.h"

namespace kvs::kernels {
namespace {

bool enabled_from_environment() {
  const char* value = std::getenv("KVSTUDIO_CPU_DECODE_KERNEL");
  return value == nullptr || (std::strcmp(value, "off") != 0 && std::strcmp(value, "0") != 0);
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{enabled_from_environment()};
  return flag;
}

// Outputs per task: a weight row is in_features values, so 16 rows of a 2048-wide
// f32 matrix are 128 KiB — large enough that thread start-up is noise, small
// enough that two threads split even a 2048-output projection evenly.
constexpr int64_t kOutputsPerTask = 16;

}  // namespace

void set_decode_kernel_enabled(bool enabled) { enabled_flag().store(enabled); }
bool decode_kernel_enabled() { return enabled_flag().load(); }

const char* decode_kernel_description(bool bf16) {
  if (!decode_kernel_enabled()) return "off";
  const SkinnyLinearIsa isa = skinny_linear_isa();
  if (isa == SkinnyLinearIsa::none)
    return skinny_linear_best_isa() == SkinnyLinearIsa::none ? "not available on this CPU" : "none (chosen)";
  if (isa == SkinnyLinearIsa::avx2) return "AVX2";
  if (!bf16) return "AVX-512";
  if (cpu_has_amx_bf16()) {
    static const std::string with_amx = std::string(skinny_linear_bf16_native() ? "AVX-512 BF16" : "AVX-512") +
                                        " up to " + std::to_string(kSkinnyLinearBf16RowsBesideAmx) +
                                        " rows, oneDNN AMX above";
    return with_amx.c_str();
  }
  return skinny_linear_bf16_native() ? "AVX-512 BF16" : "AVX-512";
}

bool linear_uses_decode_kernel(const at::Tensor& input, const at::Tensor& weight) {
  if (!decode_kernel_enabled() || !input.defined() || !weight.defined()) return false;
  if (!input.device().is_cpu() || !weight.device().is_cpu() || weight.dim() != 2 || input.dim() < 1) return false;
  if (input.scalar_type() != weight.scalar_type() || input.size(-1) != weight.size(1) || weight.size(1) == 0)
    return false;
  const bool f32 = input.scalar_type() == at::kFloat, bf16 = input.scalar_type() == at::kBFloat16;
  if (!(f32 && skinny_linear_f32_available()) && !(bf16 && skinny_linear_bf16_available())) return false;
  // The kernel records no autograd graph: training keeps at::linear.
  if (c10::GradMode::is_enabled() && (input.requires_grad() || weight.requires_grad())) return false;
  const int64_t rows = input.numel() / input.size(-1);
  // bf16 on an AMX CPU: oneDNN's tile matmul is faster past a few rows (skinny_linear.h).
  if (bf16 && rows > kSkinnyLinearBf16RowsBesideAmx && skinny_linear_isa() == SkinnyLinearIsa::avx512 &&
      cpu_has_amx_bf16())
    return false;
  return rows >= 1 && rows <= kSkinnyLinearMaxRows;
}

at::Tensor linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  if (!linear_uses_decode_kernel(input, weight) ||
      (bias.defined() && (bias.scalar_type() != weight.scalar_type() || !bias.device().is_cpu())))
    return at::linear(input, weight, bias);
  const int64_t in_features = weight.size(1), out_features = weight.size(0);
  const int64_t rows = input.numel() / in_features;
  const at::Tensor x = input.reshape({rows, in_features}).contiguous();
  const at::Tensor w = weight.contiguous();
  std::vector<int64_t> out_shape(input.sizes().begin(), input.sizes().end());
  out_shape.back() = out_features;
  at::Tensor y = at::empty({rows, out_features}, input.options());
  const bool f32 = input.scalar_type() == at::kFloat;
  at::parallel_for(0, out_features, kOutputsPerTask, [&](int64_t begin, int64_t end) {
    if (f32)
      skinny_linear_f32(x.data_ptr<float>(), rows, in_features, in_features, w.data_ptr<float>(), begin, end,
                        y.data_ptr<float>(), out_features);
    else
      skinny_linear_bf16(reinterpret_cast<const uint16_t*>(x.data_ptr<at::BFloat16>()), rows, in_features, in_features,
                         reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>()), begin, end,
                         reinterpret_cast<uint16_t*>(y.data_ptr<at::BFloat16>()), out_features);
  });
  if (bias.defined()) y.add_(bias);
  return y.view(out_shape);
}

}  // namespace kvs::kernels
