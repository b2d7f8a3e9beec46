#include "engine/cache/kv_store.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "kernels/cpu/ragged_attention_torch.h"

namespace kvs {
namespace {

const at::TensorOptions kCpuLong = at::TensorOptions().dtype(at::kLong);

}  // namespace

KvStore::KvStore(int64_t n_layer, int64_t rows, int64_t kv_heads, int64_t head_dim, int64_t capacity,
                 at::TensorOptions options)
    : layers_(n_layer), rows_(rows), kv_heads_(kv_heads), head_dim_(head_dim), options_(options) {
  if (n_layer <= 0 || rows <= 0 || kv_heads <= 0 || head_dim <= 0 || capacity < 0)
    throw InvalidArgumentError("KvStore: sizes must be positive");
  for (auto& layer : layers_) {
    layer.k = at::empty({rows, kv_heads, capacity, head_dim}, options);
    layer.v = at::empty({rows, kv_heads, capacity, head_dim}, options);
    layer.lengths = at::zeros({rows, kv_heads}, kCpuLong);
    layer.positions = at::full({rows, kv_heads, capacity}, -1, kCpuLong);
  }
  update_peak();
}

int64_t KvStore::bytes_per_entry() const {
  return head_dim_ * 2 * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options_.dtype())));
}

int64_t KvStore::length(int64_t layer, int64_t row, int64_t head) const {
  return layers_.at(layer).lengths[row][head].item<int64_t>();
}

int64_t KvStore::max_length(int64_t layer) const {
  const Layer& l = layers_.at(layer);
  return l.lengths.numel() ? l.lengths.max().item<int64_t>() : 0;
}

bool KvStore::uniform(int64_t layer) const {
  const Layer& l = layers_.at(layer);
  return l.lengths.numel() == 0 || l.lengths.min().item<int64_t>() == l.lengths.max().item<int64_t>();
}

std::vector<int64_t> KvStore::positions(int64_t layer, int64_t row, int64_t head) const {
  const Layer& l = layers_.at(layer);
  const int64_t n = l.lengths[row][head].item<int64_t>();
  const int64_t* p = l.positions[row][head].data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

void KvStore::grow(Layer& layer, int64_t needed) {
  const int64_t capacity = layer.k.size(2);
  if (needed <= capacity) return;
  const int64_t new_capacity = std::max(needed, std::max<int64_t>(capacity * 2, 16));
  const int64_t used = std::min(capacity, max_length_of(layer));
  auto k = at::empty({rows_, kv_heads_, new_capacity, head_dim_}, options_);
  auto v = at::empty({rows_, kv_heads_, new_capacity, head_dim_}, options_);
  k.narrow(2, 0, used).copy_(layer.k.narrow(2, 0, used));
  v.narrow(2, 0, used).copy_(layer.v.narrow(2, 0, used));
  auto positions = at::full({rows_, kv_heads_, new_capacity}, -1, kCpuLong);
  positions.narrow(2, 0, capacity).copy_(layer.positions);
  layer.k = k;
  layer.v = v;
  layer.positions = positions;
}

int64_t KvStore::max_length_of(const Layer& layer) { return layer.lengths.numel() ? layer.lengths.max().item<int64_t>() : 0; }

void KvStore::append(int64_t layer_index, const at::Tensor& k, const at::Tensor& v, const std::vector<int64_t>& positions) {
  Layer& layer = layers_.at(layer_index);
  const int64_t t = k.size(2);
  if (static_cast<int64_t>(positions.size()) != t) throw Error("KvStore::append: positions do not match tokens");
  if (k.size(0) != rows_ || k.size(1) != kv_heads_ || k.size(3) != head_dim_)
    throw Error("KvStore::append: keys have the wrong shape");
  const int64_t lo = layer.lengths.min().item<int64_t>();
  const int64_t hi = layer.lengths.max().item<int64_t>();
  grow(layer, hi + t);
  at::Tensor pos = at::tensor(positions, kCpuLong);
  if (lo == hi) {
    layer.k.narrow(2, lo, t).copy_(k);
    layer.v.narrow(2, lo, t).copy_(v);
    layer.positions.narrow(2, lo, t).copy_(pos.view({1, 1, t}).expand({rows_, kv_heads_, t}));
  } else {
    // Ragged: every segment continues at its own length; one scatter per buffer.
    const int64_t capacity = layer.k.size(2);
    at::Tensor segment = at::arange(rows_ * kv_heads_, kCpuLong).view({rows_, kv_heads_, 1});
    at::Tensor slot = layer.lengths.unsqueeze(-1) + at::arange(t, kCpuLong).view({1, 1, t});  // [rows, kv, t]
    at::Tensor flat = (segment * capacity + slot).reshape({-1});
    at::Tensor flat_dev = flat.to(layer.k.device());
    layer.k.view({-1, head_dim_}).index_copy_(0, flat_dev, k.reshape({-1, head_dim_}).to(layer.k.dtype()));
    layer.v.view({-1, head_dim_}).index_copy_(0, flat_dev, v.reshape({-1, head_dim_}).to(layer.v.dtype()));
    layer.positions.view({-1}).index_copy_(0, flat, pos.view({1, 1, t}).expand({rows_, kv_heads_, t}).reshape({-1}));
  }
  layer.lengths += t;
  layer.appended += t;
  update_peak();
}

void KvStore::retain(int64_t layer_index, const at::Tensor& keep_in) {
  Layer& layer = layers_.at(layer_index);
  const int64_t max_len = max_length_of(layer);
  at::Tensor keep = keep_in.to(at::kCPU, at::kBool).contiguous();
  if (keep.dim() != 3 || keep.size(0) != rows_ || keep.size(1) != kv_heads_ || keep.size(2) < max_len)
    throw Error("KvStore::retain: keep mask must be [rows, kv_heads, >= max length]");
  // Per segment: the surviving slots, in order. Built on the CPU (metadata), then
  // one gather per buffer moves survivors to the front.
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(rows_ * kv_heads_));
  int64_t new_max = 0;
  const bool* flags = keep.data_ptr<bool>();
  const int64_t* lengths = layer.lengths.data_ptr<int64_t>();
  const int64_t stride = keep.size(2);
  for (int64_t s = 0; s < rows_ * kv_heads_; ++s) {
    for (int64_t i = 0; i < lengths[s]; ++i)
      if (flags[s * stride + i]) kept[s].push_back(i);
    new_max = std::max<int64_t>(new_max, static_cast<int64_t>(kept[s].size()));
  }
  at::Tensor index = at::zeros({rows_, kv_heads_, new_max}, kCpuLong);
  at::Tensor new_lengths = at::zeros({rows_, kv_heads_}, kCpuLong);
  int64_t* idx = index.data_ptr<int64_t>();
  int64_t* nl = new_lengths.data_ptr<int64_t>();
  for (int64_t s = 0; s < rows_ * kv_heads_; ++s) {
    nl[s] = static_cast<int64_t>(kept[s].size());
    for (int64_t j = 0; j < new_max; ++j) idx[s * new_max + j] = j < nl[s] ? kept[s][j] : (nl[s] ? kept[s][nl[s] - 1] : 0);
  }
  if (new_max > 0) {
    at::Tensor index_dev = index.to(layer.k.device());
    at::Tensor gather_index = index_dev.unsqueeze(-1).expand({rows_, kv_heads_, new_max, head_dim_});
    at::Tensor k = layer.k.narrow(2, 0, max_len).gather(2, gather_index);
    at::Tensor v = layer.v.narrow(2, 0, max_len).gather(2, gather_index);
    layer.k.narrow(2, 0, new_max).copy_(k);
    layer.v.narrow(2, 0, new_max).copy_(v);
  }
  at::Tensor new_positions = at::full_like(layer.positions, -1);
  if (new_max > 0) {
    at::Tensor gathered = layer.positions.narrow(2, 0, std::max<int64_t>(max_len, 1)).gather(2, index);
    at::Tensor valid = at::arange(new_max, kCpuLong).view({1, 1, new_max}) < new_lengths.unsqueeze(-1);
    new_positions.narrow(2, 0, new_max).copy_(at::where(valid, gathered, at::full_like(gathered, -1)));
  }
  layer.positions = new_positions;
  layer.lengths = new_lengths;
}

void KvStore::retain_pairs(int64_t layer, const at::Tensor& keep) {
  if (rows_ % 2 != 0 || keep.size(0) != rows_ / 2) throw Error("KvStore::retain_pairs: needs [rows/2, ...] and even rows");
  retain(layer, at::cat({keep, keep}, 0));
}

KvAttention KvStore::attend(int64_t layer_index, const at::Tensor& queries, const std::vector<int64_t>& query_positions,
                            bool causal, bool want_probs, bool want_key_mass) const {
  const Layer& layer = layers_.at(layer_index);
  const int64_t n_head = queries.size(1), t = queries.size(2);
  const int64_t group = n_head / kv_heads_;
  const int64_t lo = layer.lengths.min().item<int64_t>();
  const int64_t hi = layer.lengths.max().item<int64_t>();
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  KvAttention result;
  const bool on_cpu_float = layer.k.device().is_cpu() && layer.k.scalar_type() == at::kFloat;
  if (on_cpu_float) {
    // The CPU kernel reads only each segment's valid entries, and beats BLAS here
    // even when all segments are equal (decode attention is memory-bound).
    at::Tensor qpos = at::tensor(query_positions, kCpuLong);
    auto r = kernels::ragged_attention(queries.to(at::kFloat).contiguous(), qpos, layer.k, layer.v, layer.lengths,
                                       layer.positions, causal, scale, want_probs, want_key_mass);
    result.out = r.out.to(queries.scalar_type());
    if (want_probs) result.probs = r.probs.narrow(-1, 0, hi);
    if (want_key_mass) result.key_mass = r.key_mass.narrow(-1, 0, hi);
    return result;
  }
  // Dense path (a device or dtype without the ragged kernel yet):
  // BLAS over [0, hi), masking slots past a segment's length and, if causal,
  // entries later than the query.
  at::Tensor keys = layer.k.narrow(2, 0, hi), values = layer.v.narrow(2, 0, hi);
  at::Tensor q = queries.reshape({rows_, kv_heads_, group * t, head_dim_});
  at::Tensor scores = at::matmul(q, keys.transpose(-1, -2)) * scale;  // [rows, kv, g*t, hi]
  const int64_t min_query = *std::min_element(query_positions.begin(), query_positions.end());
  const bool need_causal = causal && hi > 0 && layer.positions.narrow(2, 0, hi).max().item<int64_t>() > min_query;
  if (lo != hi || need_causal) {
    at::Tensor slots = at::arange(hi, kCpuLong).view({1, 1, 1, hi});
    at::Tensor blocked = slots >= layer.lengths.view({rows_, kv_heads_, 1, 1});  // [rows, kv, 1, hi]
    if (need_causal) {
      at::Tensor qpos = at::tensor(query_positions, kCpuLong).view({1, 1, t, 1});
      blocked = blocked | (layer.positions.narrow(2, 0, hi).unsqueeze(2) > qpos);  // [rows, kv, t, hi]
    }
    blocked = blocked.expand({rows_, kv_heads_, t, hi}).unsqueeze(2).expand({rows_, kv_heads_, group, t, hi});
    scores = scores.view({rows_, kv_heads_, group, t, hi})
                 .masked_fill(blocked.to(scores.device()), -std::numeric_limits<float>::infinity())
                 .view({rows_, kv_heads_, group * t, hi});
  }
  at::Tensor probs = at::softmax(scores, -1);
  if (lo != hi || need_causal) probs = at::nan_to_num(probs, 0.0);  // fully masked rows -> zeros
  result.out = at::matmul(probs, values).view({rows_, n_head, t, head_dim_});
  if (want_probs) result.probs = probs.view({rows_, n_head, t, hi});
  if (want_key_mass) result.key_mass = probs.sum(2);  // [rows, kv, hi]: over the group's queries
  return result;
}

void KvStore::keep_rows(int64_t first_row, int64_t row_count) {
  for (auto& layer : layers_) {
    layer.k = layer.k.narrow(0, first_row, row_count).clone();
    layer.v = layer.v.narrow(0, first_row, row_count).clone();
    layer.lengths = layer.lengths.narrow(0, first_row, row_count).clone();
    layer.positions = layer.positions.narrow(0, first_row, row_count).clone();
  }
  rows_ = row_count;
}

std::vector<KvMemoryStats> KvStore::memory_per_layer() const {
  std::vector<KvMemoryStats> out;
  const int64_t per_entry = bytes_per_entry();
  for (const auto& layer : layers_) {
    KvMemoryStats s;
    s.bytes_logical = layer.lengths.sum().item<int64_t>() * per_entry;
    s.bytes_allocated = static_cast<int64_t>(layer.k.nbytes() + layer.v.nbytes());
    s.bytes_full_equivalent = rows_ * kv_heads_ * layer.appended * per_entry;
    out.push_back(s);
  }
  return out;
}

KvMemoryStats KvStore::memory() const {
  KvMemoryStats total;
  for (const auto& s : memory_per_layer()) {
    total.bytes_logical += s.bytes_logical;
    total.bytes_allocated += s.bytes_allocated;
    total.bytes_full_equivalent += s.bytes_full_equivalent;
  }
  total.bytes_peak = std::max(bytes_peak_, total.bytes_allocated);
  return total;
}

std::vector<std::vector<int64_t>> KvStore::retained_per_head() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& layer : layers_) {
    at::Tensor per_head = layer.lengths.sum(0);
    out.emplace_back(per_head.data_ptr<int64_t>(), per_head.data_ptr<int64_t>() + kv_heads_);
  }
  return out;
}

void KvStore::update_peak() {
  int64_t allocated = 0;
  for (const auto& layer : layers_) allocated += static_cast<int64_t>(layer.k.nbytes() + layer.v.nbytes());
  bytes_peak_ = std::max(bytes_peak_, allocated);
}

}  // namespace kvs
