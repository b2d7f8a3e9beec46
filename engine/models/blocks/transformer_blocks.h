#pragma once
// Building blocks of the transformer families' networks that more than one
// family shares (LlamaGen's GPT, Janus-Pro's and Lumina-mGPT's language models),
// as functions, so that each runs one implementation and none includes another
// family.
#include <ATen/core/Tensor.h>

namespace kvs::transformer_blocks {

// RMSNorm as LlamaGen's and Llama's reference code write it:
//   normed = float32(x) * rsqrt(mean(float32(x)^2, -1) + eps), then
//   normed.to(x.dtype) * weight.
// On the CPU, for float32 and bf16 inputs outside autograd, one pass per row
// replaces the eight LibTorch operations of that expression (each a dispatch and
// a temporary: at one or two rows, a decode step's norms cost more in dispatch
// than in arithmetic). The mean stays LibTorch's reduction, and every other
// operation rounds as its LibTorch counterpart does, so the result is the
// operation-by-operation one bit for bit (tests/engine/test_transformer_blocks.cpp).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// The operation-by-operation expression above, kept for the GPU, other dtypes,
// autograd, and as the fast path's reference.
at::Tensor rms_norm_reference(const at::Tensor& x, const at::Tensor& weight, double eps);

// transformers' `rotate_half` RoPE: x * cos + rotate_half(x) * sin with
// rotate_half(x) = [-x2, x1] (element j pairs with j + head_dim/2); x [B, H, T, D],
// cos/sin broadcastable to it, in x's dtype.
at::Tensor rotate_half_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// Causal self-attention without a cache (teacher forcing), in float32: queries
// [B, H, T, D], keys and values [B, KV, T, D]; query head h reads KV head
// h / (H / KV) without the repeated keys being materialised; scores scaled by
// 1/sqrt(D). Returns [B, H, T, D] in the queries' dtype.
at::Tensor causal_grouped_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

}  // namespace kvs::transformer_blocks
