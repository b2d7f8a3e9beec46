#pragma once
// The policy context of a next-scale model for hand-built scale caches: square
// scales of `unit_tokens`, `layers` layers of `heads` heads of width 4, no
// condition entries; the grid is the last scale's side.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/cache/policies/cache_policy.h"

namespace kvs::test {

inline PolicyContext scale_context(std::vector<int64_t> unit_tokens, int64_t layers = 1, int64_t heads = 2,
                                   int64_t batch = 1, bool cfg = false) {
  PolicyContext c;
  c.n_layer = layers;
  c.n_head = heads;
  c.kv_heads = heads;
  c.head_dim = 4;
  c.condition_tokens = 0;
  c.batch = batch;
  c.cfg = cfg;
  c.unit_tokens = std::move(unit_tokens);
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(c.unit_tokens.back()))));
  c.grid_height = c.grid_width = side;
  return c;
}

}  // namespace kvs::test
