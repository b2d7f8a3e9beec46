#include "engine/cache/policies/cache_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <vector>

#include "engine/core/errors.h"
#include "engine/core/host_upload.h"

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
  // Non-candidates sort last; among equal scores the older (lower slot) entry
  // first. One stable sort, then the first evict_count entries of each
  // segment's order are flagged where they sit (a scatter, not a second sort:
  // this runs for every layer at every policy boundary).
  // It runs where the scores are: on a GPU when a policy's scores stay there.
  const at::Tensor scores = at::isFloatingType(score.scalar_type()) ? score : score.to(at::kDouble);
  const at::Tensor flags = upload_without_wait(candidates, scores.device());
  const at::Tensor s = at::where(flags, scores, at::full({}, INFINITY, scores.options()));
  const at::Tensor order = std::get<1>(at::sort(s, /*stable=*/true, -1, /*descending=*/false));
  const at::Tensor first = at::arange(score.size(-1), order.options()) <
                           upload_without_wait(evict_count, scores.device()).unsqueeze(-1);  // by rank
  const at::Tensor evict = at::zeros_like(flags).scatter_(-1, order, first.expand_as(order)) & flags;
  return ~evict;
}

at::Tensor unit_of_slots(const KvStore& store, int64_t layer, const PolicyContext& context) {
  const int64_t total = context.image_tokens();
  std::vector<int64_t> table;
  table.reserve(static_cast<size_t>(total) + 1);
  table.push_back(-1);  // position -1 (empty slot) -> unit -1
  for (size_t u = 0; u < context.unit_tokens.size(); ++u)
    for (int64_t i = 0; i < context.unit_tokens[u]; ++i) table.push_back(static_cast<int64_t>(u));
  const at::Tensor lookup = at::tensor(table, at::TensorOptions().dtype(at::kLong));
  const at::Tensor positions = store.positions_tensor(layer).narrow(2, 0, store.max_length(layer));
  return at::index_select(lookup, 0, (positions.clamp(-1, total - 1) + 1).reshape({-1})).reshape(positions.sizes());
}

int64_t decision_rows(const KvStore& store, const PolicyContext& context) {
  return (context.cfg && store.rows() == 2 * context.batch) ? context.batch : store.rows();
}

namespace {

// The conditional rows' keep flags [rows/2, kv_heads, >= length] for the whole
// store. When every CFG partner holds its entries in the same slots as its
// conditional row (LlamaGen, Janus-Pro), the flags are copied. When they do not
// (Lumina-mGPT's unconditional sequence has a prefix of its own), a partner
// drops an entry exactly when its conditional row drops the entry of the same
// position: the decision is about tokens, and the positions name them.
at::Tensor keep_for_pairs(const KvStore& store, int64_t layer, const at::Tensor& keep) {
  if (store.rows() % 2 != 0 || keep.size(0) != store.rows() / 2)
    throw Error("a cache policy's keep mask needs [rows] or [rows/2] rows");
  const int64_t half = store.rows() / 2;
  const int64_t length = store.max_length(layer);
  const at::Tensor positions = store.positions_tensor(layer).narrow(2, 0, length);
  const at::Tensor cond = positions.narrow(0, 0, half), partner = positions.narrow(0, half, half);
  if (at::equal(cond, partner)) return at::cat({keep, keep}, 0);
  const at::Tensor cond_keep = keep.narrow(2, 0, length).to(at::kCPU, at::kBool) & (cond >= 0);
  // Position p -> table slot p + 1 (empty slots, -1, -> 0). A position the
  // conditional row does not hold was not decided on (the partner's own prefix):
  // kept.
  const int64_t table_size = positions.max().item<int64_t>() + 2;
  at::Tensor dropped = at::zeros({half, store.kv_heads(), table_size}, cond_keep.options());
  dropped.scatter_(2, cond.clamp_min(-1) + 1, ~cond_keep & (cond >= 0));
  dropped.select(2, 0).fill_(false);
  const at::Tensor partner_keep = ~dropped.gather(2, partner.clamp_min(-1) + 1);
  return at::cat({cond_keep, partner_keep}, 0).to(keep.device());
}

}  // namespace

void apply_keep(KvStore& store, int64_t layer, const at::Tensor& keep, const PolicyContext& context) {
  if (keep.size(0) == store.rows()) store.retain(layer, keep);
  else store.retain(layer, keep_for_pairs(store, layer, keep));
  (void)context;
}

void apply_keeps(KvStore& store, const std::vector<at::Tensor>& keeps, const PolicyContext& context) {
  std::vector<at::Tensor> full(keeps.size());
  for (size_t l = 0; l < keeps.size(); ++l) {
    const at::Tensor& keep = keeps[l];
    if (!keep.defined()) continue;
    // The conditional rows' decision for their CFG partners too.
    full[l] = keep.size(0) == store.rows() ? keep : keep_for_pairs(store, static_cast<int64_t>(l), keep);
  }
  store.retain_layers(full);
  (void)context;
}

}  // namespace kvs
