#pragma once
// Attention over the packed, ragged KV cache on a GPU without a padded copy.
//
// KvStore keeps one packed [slots, D] key and value buffer per layer in which
// segment s = row * kv_heads + head owns the slots from starts[s] on and holds
// lengths[s] entries (engine/cache/kv_store.h). LibTorch's variable-length
// attention kernels read exactly that: every segment becomes one "sequence" of
// the kernel with one KV head, its grouped query heads become the kernel's query
// heads (FlashAttention-2, bf16/f16 on sm80+) or are folded into its query
// length (memory-efficient attention, float32 and older GPUs; no causal mask
// then), `cu_seqlens_k` are the segment starts and `seqused_k` the lengths, so
// the slots past a segment's length are never read.
//
// The CPU ragged kernel (kernels/cpu/ragged_attention.h) is the reference twin:
// both take the same segment description. The private ATen entry points
// (_flash_attention_forward, _efficient_attention_forward) are used only from
// LibTorch 2.5 on, where both take the used lengths; with an older LibTorch
// packed_attention_available() is false and callers take their dense path.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace kvs::kernels {

// The segments of one layer, on the device of the buffers.
struct PackedSegments {
  at::Tensor starts;       // int32 [segments + 1]: first slot of every segment, then the slot count
  at::Tensor lengths;      // int32 [segments]: entries used in each segment
  int64_t max_length = 0;  // the longest segment (host copy; bounds the kernel's grid)
};

enum class PackedAttentionKernel { None, Flash, MemoryEfficient };

const char* to_string(PackedAttentionKernel kernel);

// The kernel packed_attention() would use for these buffers, or None (CPU
// buffers, a LibTorch without the entry points, an unsupported head size, a
// causal mask that only the flash kernel applies). `causal` asks for the mask
// of a block of `queries` new entries that are each segment's last ones
// (bottom-right aligned); a single query at the newest position needs none.
PackedAttentionKernel packed_attention_kernel(const at::Tensor& keys, int64_t head_dim, bool causal);

// queries [rows, n_head, T, D] on the buffers' device and dtype; keys/values
// [slots, D]; n_head a multiple of kv_heads; returns [rows, n_head, T, D].
// An empty segment gives zeros. `causal`: see packed_attention_kernel().
// Throws KernelArgumentError for inconsistent arguments and when no kernel
// applies (check packed_attention_kernel() first).
at::Tensor packed_attention(const at::Tensor& queries, const at::Tensor& keys, const at::Tensor& values,
                            const PackedSegments& segments, int64_t kv_heads, bool causal, double scale);

// Disables a kernel for the rest of the process (after it failed at run time,
// e.g. a GPU older than it needs), so that callers fall back once, not per call.
void disable_packed_attention_kernel(PackedAttentionKernel kernel, const std::string& reason);

}  // namespace kvs::kernels
