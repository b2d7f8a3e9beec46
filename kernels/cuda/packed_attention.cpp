#include "kernels/cuda/packed_attention.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <torch/version.h>

#include <atomic>
#include <cstdio>
#include <optional>
#include <tuple>

#include "kernels/kernel_error.h"

// Both private entry points take the used lengths of a packed key buffer
// (seqused_k / seqlen_k) with these signatures from LibTorch 2.5 on.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define KVS_PACKED_ATTENTION_OPS 1
#else
#define KVS_PACKED_ATTENTION_OPS 0
#endif

namespace kvs::kernels {
namespace {

std::atomic<bool> flash_disabled{false};
std::atomic<bool> efficient_disabled{false};

void check(bool ok, const std::string& message) {
  if (!ok) throw KernelArgumentError("packed_attention: " + message);
}

// Query offsets of `segments` sequences of `per_segment` queries each.
at::Tensor query_starts(int64_t segments, int64_t per_segment, const at::Device& device) {
  return at::arange(0, (segments + 1) * per_segment, per_segment, at::TensorOptions().dtype(at::kInt).device(device));
}

}  // namespace

const char* to_string(PackedAttentionKernel kernel) {
  switch (kernel) {
    case PackedAttentionKernel::Flash: return "flash";
    case PackedAttentionKernel::MemoryEfficient: return "memory-efficient";
    default: return "none";
  }
}

void disable_packed_attention_kernel(PackedAttentionKernel kernel, const std::string& reason) {
  auto& flag = kernel == PackedAttentionKernel::Flash ? flash_disabled : efficient_disabled;
  if (kernel == PackedAttentionKernel::None || flag.exchange(true)) return;
  std::fprintf(stderr, "kvstudio: %s attention over the packed cache is off for this run: %s\n", to_string(kernel),
               reason.c_str());
}

PackedAttentionKernel packed_attention_kernel(const at::Tensor& keys, int64_t head_dim, bool causal) {
  if (!KVS_PACKED_ATTENTION_OPS || !keys.defined() || !keys.is_cuda()) return PackedAttentionKernel::None;
  const at::ScalarType dtype = keys.scalar_type();
  const bool half = dtype == at::kBFloat16 || dtype == at::kHalf;
  if (half && head_dim % 8 == 0 && head_dim <= 256 && !flash_disabled.load()) return PackedAttentionKernel::Flash;
  // The memory-efficient kernel runs with the grouped heads folded into the
  // query length, which a causal mask would cut across.
  if (!causal && (half || dtype == at::kFloat) && head_dim % 4 == 0 && !efficient_disabled.load())
    return PackedAttentionKernel::MemoryEfficient;
  return PackedAttentionKernel::None;
}

at::Tensor packed_attention(const at::Tensor& queries, const at::Tensor& keys, const at::Tensor& values,
                            const PackedSegments& segments, int64_t kv_heads, bool causal, double scale) {
  check(queries.dim() == 4, "queries must be [rows, n_head, T, D]");
  const int64_t rows = queries.size(0), n_head = queries.size(1), t = queries.size(2), d = queries.size(3);
  check(kv_heads > 0 && n_head % kv_heads == 0, "n_head must be a multiple of kv_heads");
  check(keys.dim() == 2 && keys.size(1) == d && values.sizes() == keys.sizes(), "keys/values must be [slots, D]");
  check(keys.is_contiguous() && values.is_contiguous(), "keys/values must be contiguous");
  check(queries.scalar_type() == keys.scalar_type() && values.scalar_type() == keys.scalar_type(),
        "queries, keys and values must share a dtype");
  check(queries.device() == keys.device() && values.device() == keys.device(), "tensors must share a device");
  const int64_t n_segments = rows * kv_heads;
  check(segments.starts.scalar_type() == at::kInt && segments.starts.numel() == n_segments + 1,
        "starts must be int32 [rows * kv_heads + 1]");
  check(segments.lengths.scalar_type() == at::kInt && segments.lengths.numel() == n_segments,
        "lengths must be int32 [rows * kv_heads]");
  check(segments.starts.device() == keys.device() && segments.lengths.device() == keys.device(),
        "segment tensors must be on the buffers' device");
  const int64_t group = n_head / kv_heads;
  const PackedAttentionKernel kernel = packed_attention_kernel(keys, d, causal);
  check(kernel != PackedAttentionKernel::None, "no packed attention kernel for these buffers");
  if (segments.max_length <= 0 || n_segments == 0 || t == 0) return at::zeros_like(queries);
#if KVS_PACKED_ATTENTION_OPS
  const int64_t slots = keys.size(0);
  if (kernel == PackedAttentionKernel::Flash) {
    // One kernel sequence per segment: its T queries with the group's heads
    // [T, group, D] over one KV head.
    at::Tensor q =
        queries.view({rows, kv_heads, group, t, d}).permute({0, 1, 3, 2, 4}).reshape({n_segments * t, group, d});
    at::Tensor out = std::get<0>(
        at::_flash_attention_forward(q, keys.view({slots, 1, d}), values.view({slots, 1, d}),
                                     query_starts(n_segments, t, keys.device()), segments.starts, t,
                                     segments.max_length, 0.0, causal, false, std::optional<double>(scale),
                                     std::nullopt, std::nullopt, std::optional<at::Tensor>(segments.lengths)));
    return out.view({rows, kv_heads, t, group, d}).permute({0, 1, 3, 2, 4}).reshape({rows, n_head, t, d});
  }
  // Memory-efficient kernel: the group's queries folded into one head's query
  // sequence ([group * T, 1, D] per segment; no mask, so folding is exact).
  at::Tensor q = queries.reshape({1, n_segments * group * t, 1, d});
  at::Tensor out = std::get<0>(at::_efficient_attention_forward(
      q, keys.view({1, slots, 1, d}), values.view({1, slots, 1, d}), std::nullopt,
      query_starts(n_segments, group * t, keys.device()), segments.starts, group * t, segments.max_length, 0.0,
      /*custom_mask_type=*/0, false, std::optional<double>(scale), std::optional<at::Tensor>(segments.lengths)));
  // A segment with no entries has no softmax; give it zeros as the CPU twin does.
  at::Tensor empty = (segments.lengths == 0).view({rows, kv_heads, 1, 1});
  out = out.view({rows, kv_heads, group * t, d});
  return at::where(empty, at::zeros({}, out.options()), out).view({rows, n_head, t, d});
#else
  (void)scale;
  throw KernelArgumentError("packed_attention: this LibTorch has no variable-length attention entry points");
#endif
}

}  // namespace kvs::kernels
