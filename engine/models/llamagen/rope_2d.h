#pragma once
// LlamaGen's 2-D rotary embedding (gpt.py precompute_freqs_cis_2d / apply_rotary_emb).
// head_dim/2 rotation pairs of adjacent elements (2i, 2i+1); the first half of the
// pairs rotate by the row index, the second half by the column index, both with
// frequencies base^(-2k/(head_dim/2)). The cls_token_num condition positions get
// a table of ZEROS (cos = sin = 0), which makes the class token's q and k exact
// zero vectors: its key scores 0 against every query while its value is always
// attended — a permanent attention sink.
#include <ATen/core/Tensor.h>

namespace kvs::llamagen {

// Returns [cls_token_num + grid_size^2, head_dim/2, 2] float32 (cos, sin).
at::Tensor rope_2d_table(int64_t grid_size, int64_t head_dim, double base, int64_t cls_token_num);

// x: [B, T, H, D]; table: [T, D/2, 2]. Computed in float32, returned in x's dtype
// (contiguous). On the CPU, float32 and bf16 take one pass over the elements
// (a decode step's rotations otherwise cost more in LibTorch dispatch than in
// arithmetic), equal to the operation-by-operation reference bit for bit.
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& table);
at::Tensor apply_rope_reference(const at::Tensor& x, const at::Tensor& table);

}  // namespace kvs::llamagen
