#pragma once
// Strict checking of a set of named tensors against what an architecture expects:
// every missing, unexpected and mis-shaped tensor is reported by name in one error.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvs::io {

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
};

using ShapeMap = std::map<std::string, std::vector<int64_t>>;

// Throws ModelMismatchError("<origin>: missing tensors: a, b; unexpected tensors: c;
// tensor d has shape [..], expected [..]") when `have` does not match `expected`.
void check_tensor_set(const ShapeMap& have, const std::vector<ExpectedTensor>& expected, const std::string& origin);

// Number of distinct N in names "<prefix>N.<suffix>" (how converters count
// layers and blocks in a state dict).
int64_t count_indexed(const ShapeMap& shapes, const std::string& prefix, const std::string& suffix);

}  // namespace kvs::io
