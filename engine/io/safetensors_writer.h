#pragma once
// Writes safetensors files (bundles, converted checkpoints). Tensors are made
// contiguous CPU little-endian; the header is padded to a multiple of 8 bytes so
// readers can map every tensor aligned. The write is atomic.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kvs::io {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace kvs::io
