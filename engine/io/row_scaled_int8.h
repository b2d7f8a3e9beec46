#pragma once
// Row-scaled 8-bit weight storage (the convention is described in
// safetensors_format.h): a bundle's large generator matrices stored as int8 with
// one float32 scale per output row, decoded to float when the bundle is loaded.
// It halves the F16 demo bundles' generators on disk; in memory a loaded model
// is as large as before (the weights are decoded into the run's dtype).
//
// Quantisation is symmetric per row: scale = max|w_row| / 127, q = round(w / scale),
// which keeps each row's largest weight exact and bounds every other weight's
// error by scale / 2. Only tensors of rank >= 2 with at least kMinElements
// elements are stored this way (biases, norms and small tables stay as they
// are: they are a small part of the file and the most sensitive to rounding).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/safetensors_writer.h"

namespace kvs::io {

inline constexpr int64_t kRowScaledMinElements = 4096;

// (int8 tensor, float32 [rows] scale) of a floating tensor of rank >= 1.
std::pair<at::Tensor, at::Tensor> encode_row_scaled(const at::Tensor& weights);

struct RowScaledStoreResult {
  int64_t tensors_converted = 0;
  int64_t bytes_before = 0;  // weights file size
  int64_t bytes_after = 0;
  std::vector<std::string> converted;  // names, in file order
};

// Rewrites DIR/weights.safetensors (atomically) with every eligible tensor whose
// name starts with one of `prefixes` stored row-scaled; other tensors, their
// order and the file metadata are kept byte for byte. Tensors already stored
// row-scaled are left alone, so running it twice changes nothing. Records the
// storage under provenance.weights_storage in DIR/model.json (with `command`).
// InvalidArgumentError when no prefix is given or no tensor matches one.
RowScaledStoreResult store_row_scaled(const std::string& bundle_dir, const std::vector<std::string>& prefixes,
                                      const std::string& command);

}  // namespace kvs::io
