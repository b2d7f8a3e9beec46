#include "engine/cache/policies/cache_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

namespace kvs {

at::Tensor image_entry_counts(const KvStore& store, int64_t layer, int64_t condition_tokens) {
  const at::Tensor& positions = store.positions_tensor(layer);
  return (positions >= condition_tokens).sum(-1);  // empty slots hold -1
}

ImageSlots image_slots(const KvStore& store, int64_t layer, int64_t condition_tokens) {
  ImageSlots s;
  s.length = store.max_length(layer);
  s.positions = store.positions_tensor(layer).narrow(2, 0, s.length);
  s.is_image = s.positions >= condition_tokens;
  s.rank = at::where(s.is_image, at::cumsum(s.is_image.to(at::kLong), -1) - 1, at::full_like(s.positions, -1));
  s.count = s.is_image.sum(-1);
  return s;
}

at::Tensor keep_all_but_lowest(const at::Tensor& score, const at::Tensor& candidates, const at::Tensor& evict_count) {
  const int64_t length = score.size(-1);
  // Non-candidates sort last; among equal scores the older (lower slot) entry first.
  at::Tensor s = at::where(candidates, score.to(at::kDouble), at::full_like(score, INFINITY, at::kDouble));
  at::Tensor order = std::get<1>(at::sort(s, /*stable=*/true, -1, /*descending=*/false));
  at::Tensor rank_of = std::get<1>(at::sort(order, /*stable=*/true, -1, /*descending=*/false));
  at::Tensor evict = (rank_of < evict_count.unsqueeze(-1)) & candidates;
  (void)length;
  return ~evict;
}

int64_t decision_rows(const KvStore& store, const PolicyContext& context) {
  return (context.cfg && store.rows() == 2 * context.batch) ? context.batch : store.rows();
}

void apply_keep(KvStore& store, int64_t layer, const at::Tensor& keep, const PolicyContext& context) {
  if (keep.size(0) == store.rows()) store.retain(layer, keep);
  else store.retain_pairs(layer, keep);
  (void)context;
}

}  // namespace kvs
