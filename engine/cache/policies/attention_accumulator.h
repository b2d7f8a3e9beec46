#pragma once
// Attention accumulated per sequence position over decode steps: the score of
// H2O's heavy hitters (H2O §3) and of LineAR's attention-accumulation ablation
// (LineAR §4.4, Table 6). Sums are kept per position, not per slot, because
// slots move after evictions; the prefill is never observed (the condition is
// never an eviction candidate).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kvs {

class AttentionAccumulator {
 public:
  // positions: the sequence positions a segment can ever hold (condition + image tokens).
  AttentionAccumulator(int64_t n_layer, int64_t positions);
  // key_mass: [rows, kv, L] this step's attention per slot (query heads summed over
  // each KV head's group), on any device (the sums are kept there);
  // slot_positions: [rows, kv, L] CPU, -1 for empty slots.
  // A drop from CFG rows to the conditional rows keeps the conditional sums.
  void add(int64_t layer, const at::Tensor& key_mass, const at::Tensor& slot_positions);
  // The accumulated attention of each slot's entry, for the first `decide` rows
  // ([decide, kv, L] double, on the sums' device; with add_partner, plus the sums of rows decide..2 decide,
  // the CFG partners). Zeros when nothing matching this store's rows was observed
  // (a policy adopted mid-run before its first step).
  at::Tensor slot_scores(int64_t layer, const at::Tensor& slot_positions, int64_t rows, int64_t decide,
                         bool add_partner) const;

 private:
  int64_t positions_;
  std::vector<at::Tensor> sums_;  // per layer, double [rows, kv_heads, positions] on the key mass's device
};

}  // namespace kvs
