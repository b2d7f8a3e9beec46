#pragma once
// KvStore: the one key/value cache of the engine.
//
// Layout (this first version is dense; the ragged per-head version with
// evictions replaces the internals behind the same calls):
//   per layer: keys/values [rows, kv_heads, capacity, head_dim], a valid length,
//   and the original sequence position of every retained entry.
// Mapping of the model families onto the store:
//   - raster (LlamaGen): the condition token(s) are appended at prefill, then one
//     entry per generated token; position = sequence index (cls_token_num + p).
//   - next-scale (VAR): a whole scale (1, 4, 9, ... tokens) is appended per step.
//   - masked (MAR): entries are the known tokens of the current step.
// CFG runs as one doubled batch [cond rows; uncond rows]: both halves share the
// positions list, which is what keeps "same positions in both halves" cheap.
// Attention only ever reads the valid prefix: there are no padded slots.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace kvs {

struct KvMemoryStats {
  int64_t bytes_logical = 0;    // retained entries x head_dim x 2 (K and V) x dtype size
  int64_t bytes_allocated = 0;  // what the buffers really hold
  int64_t bytes_peak = 0;       // peak of bytes_allocated over the store's life
};

class KvStore {
 public:
  KvStore(int64_t n_layer, int64_t rows, int64_t kv_heads, int64_t head_dim, int64_t capacity,
          at::TensorOptions options);

  // k, v: [rows, kv_heads, T, head_dim]; `positions` are the T original positions.
  void append(int64_t layer, const at::Tensor& k, const at::Tensor& v, const std::vector<int64_t>& positions);

  // Valid prefix views: [rows, kv_heads, length, head_dim].
  at::Tensor keys(int64_t layer) const;
  at::Tensor values(int64_t layer) const;
  int64_t length(int64_t layer) const { return layers_[layer].length; }
  const std::vector<int64_t>& positions(int64_t layer) const { return layers_[layer].positions; }

  // Keeps only the given batch rows (e.g. drops the unconditional half once CFG ends).
  void keep_rows(int64_t first_row, int64_t row_count);

  int64_t rows() const { return rows_; }
  int64_t n_layer() const { return static_cast<int64_t>(layers_.size()); }
  KvMemoryStats memory() const;

 private:
  struct Layer {
    at::Tensor k, v;  // [rows, kv_heads, capacity, head_dim]
    int64_t length = 0;
    std::vector<int64_t> positions;
  };
  void grow(Layer& layer, int64_t needed);
  void update_peak();

  std::vector<Layer> layers_;
  int64_t rows_, kv_heads_, head_dim_;
  at::TensorOptions options_;
  int64_t bytes_peak_ = 0;
};

}  // namespace kvs
