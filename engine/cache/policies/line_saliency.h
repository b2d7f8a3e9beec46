#pragma once
// LineAR's inter-line saliency (Qin et al., §3.3, Eq. 8-9), the score its line-end
// eviction ranks the mid tokens by, and HeadKV's stratified-eviction saliency (the
// same formula over the long-range or the near part of a global head's history).
//
// Two formulations compute it: the scoring kernels over the packed cache
// (KvStore::key_scores: one score per entry, the keys read in place) and the
// LibTorch one (a padded key copy, the [rows, kv, queries, L] logits, masked
// softmax, mean), kept as the reference. Which one runs is policy_scoring().
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/cache/kv_store.h"

namespace kvs {

enum class PolicyScoring {
  Automatic,  // the kernels on a GPU that has them; on the CPU the faster path there (line_saliency.cpp)
  Kernels,    // KvStore::key_scores everywhere
  Torch,      // the LibTorch formulation everywhere
};

// The path the policies' saliency takes: KVSTUDIO_POLICY_SCORING=torch or
// =kernels, read once at the first call (anything else, or unset: Automatic),
// unless set_policy_scoring() chose one (tests compare both paths in one process).
PolicyScoring policy_scoring();
void set_policy_scoring(PolicyScoring scoring);
// Whether the policies score `store` on the scoring kernels (KvStore::key_scores)
// rather than with LibTorch, as policy_scoring() and the store's device decide.
bool policy_scoring_on_kernels(const KvStore& store);

// The saliency of every slot of `layer` for the first `rows_scored` rows of the
// store (default: all), float CPU [rows_scored, kv_heads, L] with L =
// candidates.size(-1) >= the layer's longest segment: the queries
// [>= rows_scored, n_head, n, head_dim] (post-RoPE, any float dtype; the keys and
// queries are widened to float32) against every slot's key, softmax over the
// candidate slots only (candidates: bool [>= rows_scored, kv_heads, L] CPU), mean
// over the n queries and the grouped query heads; 0 outside the candidates and
// where a segment has none. Runs the path policy_scoring() picks for the store.
// With on_store_device, the kernels' scores stay on a GPU store's device (the
// LibTorch formulation still returns CPU scores).
at::Tensor line_saliency(const KvStore& store, int64_t layer, const at::Tensor& line_queries,
                         const at::Tensor& candidates, int64_t rows_scored = -1, bool on_store_device = false);

// Stores one token's queries [rows, n_head, 1, head_dim] at `slot` (0..n-1) of a
// line buffer [rows, n_head, n, head_dim] (made on first use, and anew when the
// rows or heads change). When CFG stops mid-run the queries come with fewer rows:
// the conditional rows come first, so the buffer keeps theirs and the line's
// earlier queries still score the line end.
void buffer_line_query(at::Tensor& buffer, const at::Tensor& queries, int64_t slot, int64_t n);

// The LibTorch formulation of the same, whatever policy_scoring() says: the
// reference the kernel path is tested against.
at::Tensor line_saliency_torch(const KvStore& store, int64_t layer, const at::Tensor& line_queries,
                               const at::Tensor& candidates, int64_t rows_scored = -1);

}  // namespace kvs
