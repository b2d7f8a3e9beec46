#pragma once
// What a cache policy (and the window's attention probe) sees of a decode step,
// per layer: the post-RoPE queries [rows, n_head, T, head_dim] (LineAR scores
// with them) and, when want_key_mass, the attention output with its per-key mass
// (H2O-style accumulators). The queries are valid for the call only (with CUDA
// graphs they are a buffer the next step overwrites): an observer copies what it
// keeps. Every decoder network of a family takes one per step.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

#include "engine/cache/kv_store.h"

namespace kvs {

struct StepObserver {
  std::function<void(int64_t layer, const at::Tensor& queries)> on_queries;
  bool want_key_mass = false;
  std::function<void(int64_t layer, const KvAttention& attention, const KvStore& cache)> on_attention;
};

}  // namespace kvs
