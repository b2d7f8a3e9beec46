#pragma once
// LibTorch entry point of the CPU ragged attention kernel: checks the tensors
// (dtype, device, shapes), makes them contiguous and hands their buffers to
// ragged_attention_cpu(). Shapes follow KvStore's buffers (engine/cache/kv_store.h).
#include <ATen/core/Tensor.h>

#include "kernels/kernel_error.h"

namespace kvs::kernels {

struct RaggedAttentionResult {
  at::Tensor out;       // [rows, n_head, T, D]
  at::Tensor probs;     // [rows, n_head, T, capacity]; undefined unless requested
  at::Tensor key_mass;  // [rows, kv_heads, capacity]; undefined unless requested
};

// keys/values float32 or bf16 (both the same) [rows, kv_heads, capacity, D] on the CPU; lengths int64
// [rows, kv_heads]; positions int64 [rows, kv_heads, capacity]; queries float32
// [rows, n_head, T, D]; query_positions int64 [T]. Semantics are those of
// ragged_attention_cpu() (kernels/cpu/ragged_attention.h). Throws
// kvs::kernels::KernelArgumentError naming the offending tensor.
RaggedAttentionResult ragged_attention(const at::Tensor& queries, const at::Tensor& query_positions,
                                       const at::Tensor& keys, const at::Tensor& values, const at::Tensor& lengths,
                                       const at::Tensor& positions, bool causal, double scale, bool want_probs,
                                       bool want_key_mass);

// Packed layout (KvStore's): keys/values float32 or bf16 [total_slots, D] on the CPU,
// segment s = row * kv_heads + head starting at slot offsets[row][head] (int64
// [rows, kv_heads]); lengths int64 [rows, kv_heads]; positions int64 [rows,
// kv_heads, capacity] with capacity >= every length (probs / key_mass use that
// stride too).
RaggedAttentionResult ragged_attention_packed(const at::Tensor& queries, const at::Tensor& query_positions,
                                              const at::Tensor& keys, const at::Tensor& values,
                                              const at::Tensor& offsets, const at::Tensor& lengths,
                                              const at::Tensor& positions, bool causal, double scale, bool want_probs,
                                              bool want_key_mass);

}  // namespace kvs::kernels
