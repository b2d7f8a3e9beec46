#include "engine/cache/kv_store.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "engine/core/errors.h"
#include "engine/core/host_upload.h"
#include "kernels/cpu/ragged_attention_torch.h"
#include "kernels/cuda/packed_attention.h"

namespace kvs {
namespace {

const at::TensorOptions kCpuLong = at::TensorOptions().dtype(at::kLong);
// From this many queries per attend call a CPU float32 cache of equal segments takes the BLAS path.
constexpr int64_t kDenseQueriesOnCpu = 64;

// First slot of every segment: the exclusive prefix sum of the capacities.
at::Tensor offsets_of(const at::Tensor& capacities) {
  at::Tensor flat = capacities.reshape({-1});
  return (at::cumsum(flat, 0) - flat).view(capacities.sizes()).contiguous();
}

bool all_equal(const at::Tensor& t) { return t.numel() == 0 || t.min().item<int64_t>() == t.max().item<int64_t>(); }

// The segments' bookkeeping (lengths, capacities, positions) lives in small CPU
// int64 tensors that a decode step reads and advances in every layer: plain
// loops over them cost nanoseconds where a LibTorch reduction or in-place add
// costs microseconds of dispatch.
struct LengthRange {
  int64_t lo = 0, hi = 0;
};
LengthRange length_range(const at::Tensor& lengths) {
  const at::Tensor l = lengths.contiguous();
  const int64_t* p = l.data_ptr<int64_t>();
  const int64_t n = l.numel();
  if (n == 0) return {};
  LengthRange r{p[0], p[0]};
  for (int64_t i = 1; i < n; ++i) {
    r.lo = std::min(r.lo, p[i]);
    r.hi = std::max(r.hi, p[i]);
  }
  return r;
}

// Whether some segment lacks room for `more` entries.
bool some_segment_full(const at::Tensor& lengths, const at::Tensor& capacities, int64_t more) {
  const at::Tensor l = lengths.contiguous(), c = capacities.contiguous();
  const int64_t* lp = l.data_ptr<int64_t>();
  const int64_t* cp = c.data_ptr<int64_t>();
  for (int64_t i = 0; i < l.numel(); ++i)
    if (lp[i] + more > cp[i]) return true;
  return false;
}

void add_to_lengths(at::Tensor& lengths, int64_t more) {
  if (!lengths.is_contiguous()) {
    lengths += more;
    return;
  }
  int64_t* p = lengths.data_ptr<int64_t>();
  for (int64_t i = 0; i < lengths.numel(); ++i) p[i] += more;
}

// KVSTUDIO_CUDA_ATTENTION=dense keeps GPU runs on the dense path (to compare
// the two paths in one build); anything else lets the packed kernels run.
bool packed_kernels_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("KVSTUDIO_CUDA_ATTENTION");
    return v == nullptr || std::strcmp(v, "dense") != 0;
  }();
  return allowed;
}

// Copies rows src[i] of `from` to rows dst[i] of `to` ([slots, D] buffers; may
// be the same buffer when every dst[i] <= src[i] and both ascend, as in a
// compaction). On the CPU the rows are moved directly, merged into runs of
// consecutive rows: a policy boundary moves most of a segment's entries, and a
// gather into a temporary plus a scatter would move every byte twice. On a GPU
// one gather and one scatter run on the device, with both index lists in one
// upload.
void copy_rows(const at::Tensor& from, at::Tensor& to, const std::vector<int64_t>& src,
               const std::vector<int64_t>& dst) {
  if (src.empty()) return;
  if (from.device().is_cpu() && to.device().is_cpu() && from.is_contiguous() && to.is_contiguous() &&
      from.scalar_type() == to.scalar_type()) {
    const size_t row_bytes = static_cast<size_t>(from.size(1)) * from.element_size();
    const char* in = static_cast<const char*>(from.data_ptr());
    char* out = static_cast<char*>(to.data_ptr());
    for (size_t i = 0; i < src.size();) {
      size_t n = 1;
      while (i + n < src.size() && src[i + n] == src[i] + static_cast<int64_t>(n) &&
             dst[i + n] == dst[i] + static_cast<int64_t>(n))
        ++n;
      std::memmove(out + static_cast<size_t>(dst[i]) * row_bytes, in + static_cast<size_t>(src[i]) * row_bytes,
                   n * row_bytes);
      i += n;
    }
    return;
  }
  std::vector<int64_t> both(src);
  both.insert(both.end(), dst.begin(), dst.end());
  const at::Tensor index = at::tensor(both, kCpuLong).to(from.device());
  const int64_t n = static_cast<int64_t>(src.size());
  to.index_copy_(0, index.narrow(0, n, n), from.index_select(0, index.narrow(0, 0, n)));
}

void drop_device_segments(at::Tensor& starts, at::Tensor& lengths) {
  starts = at::Tensor();
  lengths = at::Tensor();
}

}  // namespace

KvStore::KvStore(int64_t n_layer, int64_t rows, int64_t kv_heads, int64_t head_dim, int64_t capacity,
                 at::TensorOptions options)
    : layers_(n_layer), rows_(rows), kv_heads_(kv_heads), head_dim_(head_dim), options_(options) {
  if (n_layer <= 0 || rows <= 0 || kv_heads <= 0 || head_dim <= 0 || capacity < 0)
    throw InvalidArgumentError("KvStore: sizes must be positive");
  for (auto& layer : layers_) {
    layer.capacities = at::full({rows, kv_heads}, capacity, kCpuLong);
    layer.offsets = offsets_of(layer.capacities);
    layer.k = at::empty({rows * kv_heads * capacity, head_dim}, options);
    layer.v = at::empty({rows * kv_heads * capacity, head_dim}, options);
    layer.lengths = at::zeros({rows, kv_heads}, kCpuLong);
    layer.positions = at::full({rows, kv_heads, capacity}, -1, kCpuLong);
  }
  update_peak();
}

void KvStore::set_unit_headroom(int64_t entries) {
  if (entries < 0) throw InvalidArgumentError("KvStore: unit headroom must be >= 0");
  headroom_ = entries;
  fitted_ = true;
}

int64_t KvStore::bytes_per_entry() const {
  return head_dim_ * 2 * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options_.dtype())));
}

int64_t KvStore::length(int64_t layer, int64_t row, int64_t head) const {
  return layers_.at(layer).lengths[row][head].item<int64_t>();
}

int64_t KvStore::segment_capacity(int64_t layer, int64_t row, int64_t head) const {
  return layers_.at(layer).capacities[row][head].item<int64_t>();
}

int64_t KvStore::max_length(int64_t layer) const { return max_length_of(layers_.at(layer)); }

bool KvStore::uniform(int64_t layer) const { return all_equal(layers_.at(layer).lengths); }

std::vector<int64_t> KvStore::positions(int64_t layer, int64_t row, int64_t head) const {
  const Layer& l = layers_.at(layer);
  const int64_t n = l.lengths[row][head].item<int64_t>();
  const int64_t* p = l.positions[row][head].data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + n);
}

int64_t KvStore::max_length_of(const Layer& layer) { return length_range(layer.lengths).hi; }

void KvStore::repack(Layer& layer, const at::Tensor& new_capacities, const std::vector<std::vector<int64_t>>& kept) {
  const int64_t segments = rows_ * kv_heads_;
  at::Tensor new_offsets = offsets_of(new_capacities);
  const int64_t total = new_capacities.sum().item<int64_t>();
  const int64_t stride = new_capacities.numel() ? new_capacities.max().item<int64_t>() : 0;
  const int64_t* old_off = layer.offsets.data_ptr<int64_t>();
  const int64_t* new_off = new_offsets.data_ptr<int64_t>();
  const int64_t* new_cap = new_capacities.data_ptr<int64_t>();
  const int64_t old_stride = layer.positions.size(2);
  const int64_t* old_pos = layer.positions.data_ptr<int64_t>();
  at::Tensor positions = at::full({rows_, kv_heads_, stride}, -1, kCpuLong);
  at::Tensor lengths = at::zeros({rows_, kv_heads_}, kCpuLong);
  int64_t* pos = positions.data_ptr<int64_t>();
  int64_t* len = lengths.data_ptr<int64_t>();
  std::vector<int64_t> src, dst;
  size_t entries = 0;
  for (const auto& slots : kept) entries += slots.size();
  src.reserve(entries);
  dst.reserve(entries);
  for (int64_t s = 0; s < segments; ++s) {
    const auto& slots = kept[static_cast<size_t>(s)];
    const int64_t n = static_cast<int64_t>(slots.size());
    if (n > new_cap[s]) throw Error("KvStore::repack: a segment keeps more entries than its new capacity");
    len[s] = n;
    for (int64_t j = 0; j < n; ++j) {
      src.push_back(old_off[s] + slots[static_cast<size_t>(j)]);
      dst.push_back(new_off[s] + j);
      pos[s * stride + j] = old_pos[s * old_stride + slots[static_cast<size_t>(j)]];
    }
  }
  at::Tensor k = at::empty({total, head_dim_}, options_);
  at::Tensor v = at::empty({total, head_dim_}, options_);
  // Both generations of buffers exist until the old ones are released.
  update_peak(static_cast<int64_t>(k.nbytes() + v.nbytes()));
  copy_rows(layer.k, k, src, dst);
  copy_rows(layer.v, v, src, dst);
  layer.k = k;
  layer.v = v;
  layer.capacities = new_capacities.contiguous();
  layer.offsets = new_offsets;
  layer.positions = positions;
  layer.lengths = lengths;
  layer.regular = all_equal(layer.capacities);
  drop_device_segments(layer.device_starts, layer.device_lengths);
}

void KvStore::append(int64_t layer_index, const at::Tensor& k, const at::Tensor& v,
                     const std::vector<int64_t>& positions) {
  Layer& layer = layers_.at(layer_index);
  const int64_t t = k.size(2);
  write_after(layer, k, v, positions);
  layer.appended += t;
  layer.max_position_before_tail = layer.max_position;
  layer.tail_positions = positions;
  for (int64_t p : positions) layer.max_position = std::max(layer.max_position, p);
  update_peak();
}

void KvStore::write_after(Layer& layer, const at::Tensor& k, const at::Tensor& v,
                          const std::vector<int64_t>& positions) {
  const int64_t t = k.size(2);
  if (static_cast<int64_t>(positions.size()) != t) throw Error("KvStore::append: positions do not match tokens");
  if (k.size(0) != rows_ || k.size(1) != kv_heads_ || k.size(3) != head_dim_)
    throw Error("KvStore::append: keys have the wrong shape");
  const int64_t segments = rows_ * kv_heads_;
  if (some_segment_full(layer.lengths, layer.capacities, t)) {
    const at::Tensor needed = layer.lengths + t;
    // Grow the segments that lack room: to the next unit's worth with a headroom,
    // else by doubling (amortised O(1) per entry).
    at::Tensor grown = fitted_ ? needed + headroom_ : at::maximum(needed, at::clamp_min(layer.capacities * 2, 16));
    at::Tensor new_capacities = at::where(needed > layer.capacities, grown, layer.capacities);
    std::vector<std::vector<int64_t>> kept(static_cast<size_t>(segments));
    const int64_t* len = layer.lengths.data_ptr<int64_t>();
    for (int64_t s = 0; s < segments; ++s)
      for (int64_t j = 0; j < len[s]; ++j) kept[static_cast<size_t>(s)].push_back(j);
    repack(layer, new_capacities, kept);
  }
  const auto [lo, hi] = length_range(layer.lengths);
  const int64_t stride = layer.positions.size(2);
  if (layer.regular && lo == hi) {
    const int64_t capacity = stride;
    layer.k.view({rows_, kv_heads_, capacity, head_dim_}).narrow(2, lo, t).copy_(k);
    layer.v.view({rows_, kv_heads_, capacity, head_dim_}).narrow(2, lo, t).copy_(v);
    int64_t* pos = layer.positions.data_ptr<int64_t>();
    for (int64_t s = 0; s < segments; ++s) std::copy(positions.begin(), positions.end(), pos + s * stride + lo);
  } else {
    // Ragged: every segment continues at its own length; one scatter per buffer.
    // On a GPU the slots come from the device copy of the segments, so that a
    // decode step uploads no index.
    at::Tensor flat_dev;
    if (layer.k.is_cuda()) {
      with_device_segments(layer);
      at::Tensor next = (layer.device_starts.narrow(0, 0, segments) + layer.device_lengths).to(at::kLong);
      flat_dev = (next.view({segments, 1}) + at::arange(t, next.options()).view({1, t})).reshape({-1});
    } else {
      at::Tensor slot = (layer.offsets + layer.lengths).unsqueeze(-1) + at::arange(t, kCpuLong).view({1, 1, t});
      flat_dev = slot.reshape({-1}).to(layer.k.device());
    }
    layer.k.index_copy_(0, flat_dev, k.reshape({-1, head_dim_}).to(layer.k.dtype()));
    layer.v.index_copy_(0, flat_dev, v.reshape({-1, head_dim_}).to(layer.v.dtype()));
    int64_t* pos = layer.positions.data_ptr<int64_t>();
    const int64_t* len = layer.lengths.data_ptr<int64_t>();
    for (int64_t s = 0; s < segments; ++s)
      for (int64_t j = 0; j < t; ++j) pos[s * stride + len[s] + j] = positions[static_cast<size_t>(j)];
  }
  add_to_lengths(layer.lengths, t);
  if (layer.device_lengths.defined()) layer.device_lengths.add_(t);
}

void KvStore::set_aside(int64_t layer_index, const at::Tensor& aside_in) {
  Layer& layer = layers_.at(layer_index);
  if (layer.aside_k.defined())
    throw Error("KvStore::set_aside: layer " + std::to_string(layer_index) +
                " already has entries set aside (bring them back first)");
  const int64_t max_len = max_length_of(layer);
  at::Tensor aside = aside_in.to(at::kCPU, at::kBool).contiguous();
  if (aside.dim() != 3 || aside.size(0) != rows_ || aside.size(1) != kv_heads_ || aside.size(2) < max_len)
    throw Error("KvStore::set_aside: mask must be [rows, kv_heads, >= max length]");
  // Every segment's flagged slots, which must name segment 0's positions in order.
  const int64_t segments = rows_ * kv_heads_;
  const bool* flags = aside.data_ptr<bool>();
  const int64_t* len = layer.lengths.data_ptr<int64_t>();
  const int64_t* off = layer.offsets.data_ptr<int64_t>();
  const int64_t* pos = layer.positions.data_ptr<int64_t>();
  const int64_t stride = layer.positions.size(2), flag_stride = aside.size(2);
  std::vector<int64_t> first_positions, slots;
  for (int64_t s = 0; s < segments; ++s) {
    size_t n = 0;
    for (int64_t j = 0; j < len[s]; ++j) {
      if (!flags[s * flag_stride + j]) continue;
      const int64_t p = pos[s * stride + j];
      if (s == 0) first_positions.push_back(p);
      else if (n >= first_positions.size() || first_positions[n] != p)
        throw Error("KvStore::set_aside: every segment must set aside the same positions in the same order");
      slots.push_back(off[s] + j);
      ++n;
    }
    if (n != first_positions.size())
      throw Error("KvStore::set_aside: every segment must set aside the same positions in the same order");
  }
  if (first_positions.empty()) return;
  const auto n = static_cast<int64_t>(first_positions.size());
  const at::Tensor index = at::tensor(slots, kCpuLong).to(layer.k.device());
  layer.aside_k = layer.k.index_select(0, index).view({rows_, kv_heads_, n, head_dim_});
  layer.aside_v = layer.v.index_select(0, index).view({rows_, kv_heads_, n, head_dim_});
  layer.aside_positions = std::move(first_positions);
  update_peak();  // the copies and the entries they came from exist together here
  const int64_t evicted = layer.evicted_first_row;
  retain(layer_index, ~aside);
  layer.evicted_first_row = evicted;  // hidden, not evicted
}

void KvStore::bring_back(int64_t layer_index) {
  Layer& layer = layers_.at(layer_index);
  if (!layer.aside_k.defined()) return;
  write_after(layer, layer.aside_k, layer.aside_v, layer.aside_positions);
  // The segments no longer end with the last append (see tail_positions).
  layer.tail_positions.clear();
  layer.aside_k = at::Tensor();
  layer.aside_v = at::Tensor();
  layer.aside_positions.clear();
  update_peak();
}

int64_t KvStore::set_aside_count(int64_t layer) const {
  return static_cast<int64_t>(layers_.at(layer).aside_positions.size());
}

void KvStore::retain(int64_t layer_index, const at::Tensor& keep_in) {
  retain_with(layer_index, keep_in.to(at::kCPU, at::kBool).contiguous(), keep_in);
}

void KvStore::drop_padding(int64_t layer_index, const at::Tensor& keep_in) {
  Layer& layer = layers_.at(layer_index);
  const at::Tensor keep = keep_in.to(at::kCPU, at::kBool).contiguous();
  const int64_t before = layer.lengths.sum().item<int64_t>();
  const int64_t evicted_before = layer.evicted_first_row;
  retain_with(layer_index, keep, keep_in);
  layer.padding += before - layer.lengths.sum().item<int64_t>();
  layer.evicted_first_row = evicted_before;
}

void KvStore::retain_with(int64_t layer_index, const at::Tensor& keep, const at::Tensor& keep_in) {
  Layer& layer = layers_.at(layer_index);
  const int64_t max_len = max_length_of(layer);
  if (keep.dim() != 3 || keep.size(0) != rows_ || keep.size(1) != kv_heads_ || keep.size(2) < max_len)
    throw Error("KvStore::retain: keep mask must be [rows, kv_heads, >= max length]");
  // Per segment: the surviving slots, in order (metadata, on the CPU).
  const int64_t segments = rows_ * kv_heads_;
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(segments));
  const bool* flags = keep.data_ptr<bool>();
  const int64_t* lengths = layer.lengths.data_ptr<int64_t>();
  const int64_t keep_stride = keep.size(2);
  for (int64_t s = 0; s < segments; ++s)
    for (int64_t i = 0; i < lengths[s]; ++i)
      if (flags[s * keep_stride + i]) kept[static_cast<size_t>(s)].push_back(i);
  for (int64_t s = 0; s < kv_heads_; ++s)  // row 0's segments come first
    layer.evicted_first_row += lengths[s] - static_cast<int64_t>(kept[static_cast<size_t>(s)].size());
  layer.tail_positions.clear();
  drop_device_segments(layer.device_starts, layer.device_lengths);

  at::Tensor capacities = layer.capacities;
  bool shrink = false;
  if (fitted_) {
    // Shrink segments that now hold far less than their room (HeadKV's local heads,
    // VAR layers after their last scale).
    at::Tensor new_lengths = at::empty({rows_, kv_heads_}, kCpuLong);
    for (int64_t s = 0; s < segments; ++s)
      new_lengths.data_ptr<int64_t>()[s] = static_cast<int64_t>(kept[static_cast<size_t>(s)].size());
    at::Tensor fitted = new_lengths + headroom_;
    shrink = (layer.capacities > fitted).any().item<bool>();
    if (shrink) capacities = at::where(layer.capacities > fitted, fitted, layer.capacities);
  }
  // A GPU store compacts on the device (kv_store_compaction.cpp), shrinking or
  // not; a keep mask already there (a policy that decided there) is read as it is.
  const at::Tensor& device_keep = keep_in.device() == layer.k.device() ? keep_in : keep;
  if (layer.k.is_cuda() && compact_on_device(layer, device_keep, kept, capacities)) return;
  if (shrink) {
    repack(layer, capacities, kept);
    return;
  }
  // In place: survivors move to the front of their own segment (slot j <= its
  // source slot, so an ascending gather never overwrites a pending source).
  const int64_t* off = layer.offsets.data_ptr<int64_t>();
  const int64_t stride = layer.positions.size(2);
  int64_t* pos = layer.positions.data_ptr<int64_t>();
  int64_t* len = layer.lengths.data_ptr<int64_t>();
  std::vector<int64_t> src, dst;
  size_t entries = 0;
  for (const auto& slots : kept) entries += slots.size();
  src.reserve(entries);
  dst.reserve(entries);
  for (int64_t s = 0; s < segments; ++s) {
    const auto& slots = kept[static_cast<size_t>(s)];
    const int64_t n = static_cast<int64_t>(slots.size());
    for (int64_t j = 0; j < n; ++j) {
      const int64_t from = slots[static_cast<size_t>(j)];
      if (from == j) continue;
      src.push_back(off[s] + from);
      dst.push_back(off[s] + j);
      pos[s * stride + j] = pos[s * stride + from];
    }
    for (int64_t j = n; j < len[s]; ++j) pos[s * stride + j] = -1;
    len[s] = n;
  }
  copy_rows(layer.k, layer.k, src, dst);
  copy_rows(layer.v, layer.v, src, dst);
}

std::vector<int64_t> KvStore::evicted_first_row() const {
  std::vector<int64_t> out;
  for (const Layer& layer : layers_) out.push_back(layer.evicted_first_row);
  return out;
}

std::vector<int64_t> KvStore::evicted_first_row_since_last_report() const {
  std::vector<int64_t> now = evicted_first_row(), out(now.size(), 0);
  evicted_reported_.resize(now.size(), 0);
  for (size_t l = 0; l < now.size(); ++l) out[l] = now[l] - evicted_reported_[l];
  evicted_reported_ = now;
  return out;
}

void KvStore::retain_pairs(int64_t layer, const at::Tensor& keep) {
  if (rows_ % 2 != 0 || keep.size(0) != rows_ / 2)
    throw Error("KvStore::retain_pairs: needs [rows/2, ...] and even rows");
  retain(layer, at::cat({keep, keep}, 0));
}

at::Tensor KvStore::padded(const Layer& layer, const at::Tensor& buffer, int64_t length) const {
  if (length <= 0 || buffer.size(0) == 0)
    return at::zeros({rows_, kv_heads_, std::max<int64_t>(length, 0), head_dim_}, options_);
  at::Tensor out;
  if (layer.regular) {
    const int64_t capacity = layer.positions.size(2);
    out = buffer.view({rows_, kv_heads_, capacity, head_dim_}).narrow(2, 0, length);
  } else {
    // Slot j of segment s, clamped into the segment's own room.
    at::Tensor j = at::arange(length, kCpuLong).view({1, 1, length});
    at::Tensor last = at::clamp_min(layer.capacities - 1, 0).unsqueeze(-1);
    at::Tensor index = layer.offsets.unsqueeze(-1) + at::minimum(j, last);
    index = at::clamp_max(index, buffer.size(0) - 1).reshape({-1}).to(buffer.device());
    out = buffer.index_select(0, index).view({rows_, kv_heads_, length, head_dim_});
  }
  // Slots past a segment's length hold whatever the allocator left there — on a
  // GPU that can be NaN or Inf, and a masked-out probability of 0 times NaN is
  // still NaN. Zero them, so that every reader (the dense attention path, policy
  // scores) sees finite numbers.
  if (layer.lengths.min().item<int64_t>() < length) {
    at::Tensor past = at::arange(length, kCpuLong).view({1, 1, length}) >= layer.lengths.unsqueeze(-1);
    out = out.masked_fill(past.unsqueeze(-1).to(out.device()), 0);
  }
  return out;
}

at::Tensor KvStore::keys(int64_t layer, int64_t length) const {
  const Layer& l = layers_.at(layer);
  return padded(l, l.k, length);
}

at::Tensor KvStore::values(int64_t layer, int64_t length) const {
  const Layer& l = layers_.at(layer);
  return padded(l, l.v, length);
}

const KvStore::Layer& KvStore::with_device_segments(const Layer& layer) const {
  if (layer.device_starts.defined()) return layer;
  const int64_t total = layer.k.size(0);
  at::Tensor starts = at::cat({layer.offsets.reshape({-1}), at::full({1}, total, kCpuLong)}).to(at::kInt);
  layer.device_starts = upload_without_wait(starts, layer.k.device());
  layer.device_lengths = upload_without_wait(layer.lengths.reshape({-1}).to(at::kInt), layer.k.device());
  return layer;
}

bool KvStore::packed_path(const Layer& layer, int64_t t, const std::vector<int64_t>& query_positions, bool causal,
                          bool* needs_mask) const {
  *needs_mask = false;
  if (!layer.k.is_cuda() || !packed_kernels_allowed() || t == 0) return false;
  const int64_t min_query = *std::min_element(query_positions.begin(), query_positions.end());
  if (causal && layer.max_position > min_query) {
    // Later entries than some query: only the block just appended, attended by
    // itself in order, is a mask the kernels apply (bottom-right aligned).
    const bool tail_block = t > 1 && layer.tail_positions == query_positions &&
                            layer.max_position_before_tail < min_query &&
                            std::is_sorted(query_positions.begin(), query_positions.end());
    if (!tail_block) return false;
    *needs_mask = true;
  }
  return kernels::packed_attention_kernel(layer.k, head_dim_, *needs_mask) != kernels::PackedAttentionKernel::None;
}

std::string KvStore::attention_path(int64_t layer_index) const {
  const Layer& layer = layers_.at(layer_index);
  if (layer.k.device().is_cpu())
    return layer.k.scalar_type() == at::kFloat || layer.k.scalar_type() == at::kBFloat16 ? "cpu-ragged" : "dense";
  bool mask = false;
  const int64_t next = layer.max_position + 1;
  if (!packed_path(layer, 1, {next}, true, &mask)) return "dense";
  return kernels::to_string(kernels::packed_attention_kernel(layer.k, head_dim_, mask));
}

KvAttention KvStore::attend(int64_t layer_index, const at::Tensor& queries, const std::vector<int64_t>& query_positions,
                            bool causal, bool want_probs, bool want_key_mass) const {
  const Layer& layer = layers_.at(layer_index);
  const int64_t n_head = queries.size(1), t = queries.size(2);
  const int64_t group = n_head / kv_heads_;
  const auto [lo, hi] = length_range(layer.lengths);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  KvAttention result;
  // Many queries at once (a next-scale model's scale, a masked model's step) over a
  // float32 cache whose segments are all equal: BLAS's matrix products beat the
  // kernel's per-query loops (compute-bound, not memory-bound; a 32x32 scale of
  // a reduced Infinity attended 1.6x slower on the kernel, 2 cores, AVX2).
  const bool many_queries_dense = t >= kDenseQueriesOnCpu && lo == hi && layer.k.scalar_type() == at::kFloat;
  // The same many queries over segments of unequal lengths (a policy that keeps
  // more in some heads than in others, as HeatKV does), with nothing to mask and
  // no probabilities to hand out: one fused attention per segment over exactly
  // its entries, instead of the kernel's per-query loops or a padded product.
  const int64_t first_query = *std::min_element(query_positions.begin(), query_positions.end());
  if (t >= kDenseQueriesOnCpu && lo != hi && layer.k.device().is_cpu() && layer.k.scalar_type() == at::kFloat &&
      !want_probs && !want_key_mass && !(causal && layer.max_position > first_query)) {
    const at::Tensor q = queries.to(at::kFloat).reshape({rows_, kv_heads_, group * t, head_dim_});
    at::Tensor out = at::zeros_like(q);  // an empty segment attends to nothing: zeros, as the dense path gives
    const at::Tensor offsets = layer.offsets.contiguous(), lengths = layer.lengths.contiguous();
    const int64_t* off = offsets.data_ptr<int64_t>();
    const int64_t* len = lengths.data_ptr<int64_t>();
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t h = 0; h < kv_heads_; ++h) {
        const int64_t segment = r * kv_heads_ + h, n = len[segment];
        if (n == 0) continue;
        const at::Tensor k = layer.k.narrow(0, off[segment], n).view({1, 1, n, head_dim_});
        const at::Tensor v = layer.v.narrow(0, off[segment], n).view({1, 1, n, head_dim_});
        out[r][h].copy_(
            at::scaled_dot_product_attention(q[r][h].view({1, 1, group * t, head_dim_}), k, v, {}, 0.0, false, scale)
                .view({group * t, head_dim_}));
      }
    result.out = out.view({rows_, n_head, t, head_dim_}).to(queries.scalar_type());
    return result;
  }
  const bool on_cpu_kernel = layer.k.device().is_cpu() && !many_queries_dense &&
                             (layer.k.scalar_type() == at::kFloat || layer.k.scalar_type() == at::kBFloat16);
  if (on_cpu_kernel) {
    // The CPU kernel reads only each segment's valid entries, and beats BLAS here
    // even when all segments are equal (decode attention is memory-bound). A bf16
    // cache is widened per segment as it is read and attended in float32.
    at::Tensor qpos = at::tensor(query_positions, kCpuLong);
    kernels::RaggedAttentionResult r;
    try {
      r = kernels::ragged_attention_packed(queries.to(at::kFloat).contiguous(), qpos, layer.k, layer.v, layer.offsets,
                                           layer.lengths, layer.positions, causal, scale, want_probs, want_key_mass);
    } catch (const kernels::KernelArgumentError& e) {
      // kernels/ sits below the engine and cannot throw its typed errors; the
      // message already names the kernel, the argument and what was expected.
      throw InvalidArgumentError(e.what());
    }
    result.out = r.out.to(queries.scalar_type());
    if (want_probs) result.probs = r.probs.narrow(-1, 0, hi);
    if (want_key_mass) result.key_mass = r.key_mass.narrow(-1, 0, hi);
    return result;
  }
  bool mask = false;
  // On a GPU the key mass (H2O's, the scale policies') comes from the scoring
  // kernel beside the packed attention; without the kernels it takes the dense path.
  if (!want_probs && (!want_key_mass || (layer.k.is_cuda() && cuda_kernels_usable())) &&
      packed_path(layer, t, query_positions, causal, &mask)) {
    const Layer& l = with_device_segments(layer);
    kernels::PackedSegments segments{l.device_starts, l.device_lengths, hi};
    try {
      result.out = kernels::packed_attention(queries.to(layer.k.scalar_type()).contiguous(), layer.k, layer.v, segments,
                                             kv_heads_, mask, scale)
                       .to(queries.scalar_type());
      // `mask`: some entries are later than some query (a block attending itself).
      if (want_key_mass) result.key_mass = key_mass_on_device(layer, queries, query_positions, mask);
      return result;
    } catch (const kernels::KernelArgumentError& e) {
      throw InvalidArgumentError(e.what());
    } catch (const c10::Error& e) {
      // The kernel exists in this LibTorch but not for this GPU (e.g. flash on
      // a pre-Ampere card): fall back to the dense path from now on.
      kernels::disable_packed_attention_kernel(kernels::packed_attention_kernel(layer.k, head_dim_, mask),
                                               e.what_without_backtrace());
    }
  }
  // Dense path (probs or key mass asked for, CUDA without a packed kernel, many
  // queries over equal float32 segments on the CPU, and f16 caches on the CPU: no
  // ragged kernel for them yet):
  // BLAS over [0, hi), masking slots past a segment's length and, if causal,
  // entries later than the query.
  at::Tensor keys = padded(layer, layer.k, hi), values = padded(layer, layer.v, hi);
  at::Tensor q = queries.reshape({rows_, kv_heads_, group * t, head_dim_});
  const int64_t min_query = *std::min_element(query_positions.begin(), query_positions.end());
  const bool need_causal = causal && hi > 0 && layer.max_position > min_query;
  if (many_queries_dense && !want_probs && !want_key_mass && !need_causal && hi > 0) {
    // Nothing to mask and no probabilities to hand out: LibTorch's fused CPU
    // attention (flash-style blocks with an online softmax) never writes the
    // [queries x keys] score matrix that the products below go through, which at
    // a large scale is memory traffic of its own (a 32x32 scale over 2,521
    // entries: 10 MB of scores per head and row). Float32 throughout.
    result.out = at::scaled_dot_product_attention(q.to(at::kFloat), keys, values, {}, 0.0, false, scale)
                     .view({rows_, n_head, t, head_dim_})
                     .to(queries.scalar_type());
    return result;
  }
  at::Tensor scores = at::matmul(q, keys.transpose(-1, -2)) * scale;  // [rows, kv, g*t, hi]
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
  // Softmax in float32 whatever the buffers hold (bf16/f16 caches): its
  // exponentials and sum are what half-precision rounding hurts, and the probs
  // the policies and the attention maps read stay float32.
  at::Tensor probs = at::softmax(scores, -1, at::kFloat);
  if (lo != hi || need_causal) probs = at::nan_to_num(probs, 0.0);  // fully masked rows -> zeros
  result.out = at::matmul(probs.to(values.scalar_type()), values).view({rows_, n_head, t, head_dim_});
  if (want_probs) result.probs = probs.view({rows_, n_head, t, hi});
  if (want_key_mass) result.key_mass = probs.sum(2);  // [rows, kv, hi]: over the group's queries
  return result;
}

void KvStore::keep_rows(int64_t first_row, int64_t row_count) {
  if (first_row < 0 || row_count <= 0 || first_row + row_count > rows_)
    throw Error("KvStore::keep_rows: rows out of range");
  for (const auto& layer : layers_)
    if (layer.aside_k.defined()) throw Error("KvStore::keep_rows: entries are set aside; bring them back first");
  for (const auto& layer : layers_)
    if (layer.padding > 0) throw Error("KvStore::keep_rows: a store with dropped padding keeps all its rows");
  for (auto& layer : layers_) {
    // Whole segments (all their slots) of the kept rows, in order.
    at::Tensor capacities = layer.capacities.narrow(0, first_row, row_count).contiguous();
    at::Tensor offsets = layer.offsets.narrow(0, first_row, row_count).contiguous();
    const int64_t* cap = capacities.data_ptr<int64_t>();
    const int64_t* off = offsets.data_ptr<int64_t>();
    std::vector<int64_t> slots;
    for (int64_t s = 0; s < capacities.numel(); ++s)
      for (int64_t j = 0; j < cap[s]; ++j) slots.push_back(off[s] + j);
    at::Tensor index = at::tensor(slots, kCpuLong).to(layer.k.device());
    layer.k = slots.empty() ? at::empty({0, head_dim_}, options_) : layer.k.index_select(0, index);
    layer.v = slots.empty() ? at::empty({0, head_dim_}, options_) : layer.v.index_select(0, index);
    layer.capacities = capacities;
    layer.offsets = offsets_of(capacities);
    layer.lengths = layer.lengths.narrow(0, first_row, row_count).clone();
    layer.positions = layer.positions.narrow(0, first_row, row_count).clone();
    drop_device_segments(layer.device_starts, layer.device_lengths);
  }
  rows_ = row_count;
}

int64_t KvStore::allocated_bytes(const Layer& layer) {
  int64_t bytes = static_cast<int64_t>(layer.k.nbytes() + layer.v.nbytes());
  if (layer.aside_k.defined()) bytes += static_cast<int64_t>(layer.aside_k.nbytes() + layer.aside_v.nbytes());
  return bytes;
}

std::vector<KvMemoryStats> KvStore::memory_per_layer() const {
  std::vector<KvMemoryStats> out;
  const int64_t per_entry = bytes_per_entry();
  for (const auto& layer : layers_) {
    KvMemoryStats s;
    // Entries set aside are held, not freed: they count as retained and allocated.
    const int64_t aside = rows_ * kv_heads_ * static_cast<int64_t>(layer.aside_positions.size());
    s.bytes_logical = (layer.lengths.sum().item<int64_t>() + aside) * per_entry;
    s.bytes_allocated = allocated_bytes(layer);
    s.bytes_full_equivalent = (rows_ * kv_heads_ * layer.appended - layer.padding) * per_entry;
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

std::vector<std::vector<int64_t>> KvStore::allocated_per_head() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& layer : layers_) {
    at::Tensor per_head = layer.capacities.sum(0);
    out.emplace_back(per_head.data_ptr<int64_t>(), per_head.data_ptr<int64_t>() + kv_heads_);
  }
  return out;
}

std::vector<std::vector<int64_t>> KvStore::retained_per_head() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& layer : layers_) {
    at::Tensor per_head = layer.lengths.sum(0);
    out.emplace_back(per_head.data_ptr<int64_t>(), per_head.data_ptr<int64_t>() + kv_heads_);
  }
  return out;
}

void KvStore::update_peak(int64_t transient_bytes) {
  int64_t allocated = transient_bytes;
  for (const auto& layer : layers_) allocated += allocated_bytes(layer);
  bytes_peak_ = std::max(bytes_peak_, allocated);
}

}  // namespace kvs
