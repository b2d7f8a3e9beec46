#pragma once
// LineAR's inter-line saliency (Qin et al., §3.3, Eq. 8-9), the score its line-end
// eviction ranks the mid tokens by; a function of its own so that the scoring
// kernels' CPU twin can be checked against exactly what the policy computes.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/cache/kv_store.h"

namespace kvs {

// The saliency of every slot of `layer` for all rows of the store, float CPU
// [rows, kv_heads, L] with L = mid.size(-1): the line's queries line_queries
// [>= rows, n_head, n, head_dim] (post-RoPE, the cache's dtype) against every
// slot's key, softmax over the mid slots only (mid: bool [rows, kv_heads, L]
// CPU), mean over the n queries and the grouped query heads; 0 outside the mid
// region and where a segment has none.
at::Tensor line_saliency(const KvStore& store, int64_t layer, const at::Tensor& line_queries, const at::Tensor& mid);

}  // namespace kvs
