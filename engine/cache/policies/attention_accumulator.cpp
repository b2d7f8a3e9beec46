#include "engine/cache/policies/attention_accumulator.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/host_upload.h"

namespace kvs {

AttentionAccumulator::AttentionAccumulator(int64_t n_layer, int64_t positions)
    : positions_(positions), sums_(static_cast<size_t>(n_layer)) {}

void AttentionAccumulator::add(int64_t layer, const at::Tensor& key_mass, const at::Tensor& slot_positions) {
  at::Tensor& sums = sums_.at(static_cast<size_t>(layer));
  // The sums live where the key mass is: on a GPU nothing comes to the host
  // per decode step (the positions go up without a wait).
  const at::Tensor mass = key_mass.to(at::kDouble);  // [rows, kv, L]
  const at::Tensor positions = upload_without_wait(slot_positions, mass.device());
  const int64_t rows = mass.size(0);
  // CFG dropped: the conditional rows come first, so their sums stay valid.
  if (sums.defined() && sums.size(0) > rows && sums.size(1) == mass.size(1)) sums = sums.narrow(0, 0, rows).clone();
  if (!sums.defined() || sums.size(0) != rows || sums.size(1) != mass.size(1) || sums.device() != mass.device())
    sums = at::zeros({rows, mass.size(1), positions_}, mass.options());
  at::Tensor valid = (positions >= 0) & (positions < positions_);
  sums.scatter_add_(2, at::where(valid, positions, at::zeros_like(positions)),
                    at::where(valid, mass, at::zeros_like(mass)));
}

at::Tensor AttentionAccumulator::slot_scores(int64_t layer, const at::Tensor& slot_positions, int64_t rows,
                                             int64_t decide, bool add_partner) const {
  const at::Tensor& sums = sums_.at(static_cast<size_t>(layer));
  const int64_t kv = slot_positions.size(1), length = slot_positions.size(2);
  if (!sums.defined() || sums.size(0) != rows || sums.size(1) != kv)
    return at::zeros({decide, kv, length}, at::TensorOptions().dtype(at::kDouble));
  const at::Tensor positions = upload_without_wait(slot_positions, sums.device());
  auto lookup = [&](int64_t first_row) {
    at::Tensor pos = positions.narrow(0, first_row, decide).clamp(0, positions_ - 1);
    return sums.narrow(0, first_row, decide).gather(2, pos);
  };
  at::Tensor score = lookup(0);
  if (add_partner && decide != rows) score = score + lookup(decide);
  return score;
}

}  // namespace kvs
