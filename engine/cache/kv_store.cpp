#include "engine/cache/kv_store.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"

namespace kvs {

KvStore::KvStore(int64_t n_layer, int64_t rows, int64_t kv_heads, int64_t head_dim, int64_t capacity,
                 at::TensorOptions options)
    : layers_(n_layer), rows_(rows), kv_heads_(kv_heads), head_dim_(head_dim), options_(options) {
  for (auto& layer : layers_) {
    layer.k = at::empty({rows, kv_heads, capacity, head_dim}, options);
    layer.v = at::empty({rows, kv_heads, capacity, head_dim}, options);
    layer.positions.reserve(capacity);
  }
  update_peak();
}

void KvStore::grow(Layer& layer, int64_t needed) {
  const int64_t capacity = layer.k.size(2);
  if (needed <= capacity) return;
  const int64_t new_capacity = std::max(needed, capacity * 2);
  auto k = at::empty({rows_, kv_heads_, new_capacity, head_dim_}, options_);
  auto v = at::empty({rows_, kv_heads_, new_capacity, head_dim_}, options_);
  k.narrow(2, 0, layer.length).copy_(layer.k.narrow(2, 0, layer.length));
  v.narrow(2, 0, layer.length).copy_(layer.v.narrow(2, 0, layer.length));
  layer.k = k;
  layer.v = v;
}

void KvStore::append(int64_t layer_index, const at::Tensor& k, const at::Tensor& v,
                     const std::vector<int64_t>& positions) {
  Layer& layer = layers_.at(layer_index);
  const int64_t t = k.size(2);
  if (static_cast<int64_t>(positions.size()) != t) throw Error("KvStore::append: positions do not match tokens");
  grow(layer, layer.length + t);
  layer.k.narrow(2, layer.length, t).copy_(k);
  layer.v.narrow(2, layer.length, t).copy_(v);
  layer.length += t;
  layer.positions.insert(layer.positions.end(), positions.begin(), positions.end());
  update_peak();
}

at::Tensor KvStore::keys(int64_t layer) const {
  const Layer& l = layers_.at(layer);
  return l.k.narrow(2, 0, l.length);
}

at::Tensor KvStore::values(int64_t layer) const {
  const Layer& l = layers_.at(layer);
  return l.v.narrow(2, 0, l.length);
}

void KvStore::keep_rows(int64_t first_row, int64_t row_count) {
  for (auto& layer : layers_) {
    layer.k = layer.k.narrow(0, first_row, row_count).clone();
    layer.v = layer.v.narrow(0, first_row, row_count).clone();
  }
  rows_ = row_count;
}

KvMemoryStats KvStore::memory() const {
  KvMemoryStats stats;
  const int64_t elem = static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options_.dtype())));
  for (const auto& layer : layers_) {
    stats.bytes_logical += 2 * rows_ * kv_heads_ * layer.length * head_dim_ * elem;
    stats.bytes_allocated += static_cast<int64_t>(layer.k.nbytes() + layer.v.nbytes());
  }
  stats.bytes_peak = std::max(bytes_peak_, stats.bytes_allocated);
  return stats;
}

void KvStore::update_peak() {
  int64_t allocated = 0;
  for (const auto& layer : layers_) allocated += static_cast<int64_t>(layer.k.nbytes() + layer.v.nbytes());
  bytes_peak_ = std::max(bytes_peak_, allocated);
}

}  // namespace kvs
