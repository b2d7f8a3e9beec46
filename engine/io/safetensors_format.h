#pragma once
// The safetensors container, parsed and validated without LibTorch (so that it
// can be fuzzed on its own). Layout: u64 little-endian header length N, N bytes of
// UTF-8 JSON {name: {dtype, shape, data_offsets:[begin,end]}, "__metadata__": {..}},
// then the raw data section; offsets are relative to the data section.
//
// Validation is strict: header length against file size, JSON well-formedness,
// duplicate names, known dtype names, shape x dtype size == byte span, spans
// inside the data section and non-overlapping. Every failure throws
// kvs::FormatError naming the origin (usually the file path) and the tensor.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvs::io {

enum class DType { F32, F16, BF16, I64, I32, U8 };

const char* dtype_name(DType dtype);  // "F32", ...
std::size_t dtype_size(DType dtype);  // bytes per element
bool parse_dtype(const std::string& name, DType* out);

struct TensorEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // relative to the data section
  uint64_t end = 0;
  uint64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

struct SafetensorsIndex {
  std::vector<TensorEntry> tensors;  // in header order
  std::map<std::string, std::string> metadata;
  uint64_t header_bytes = 0;  // N
  uint64_t data_offset = 0;   // 8 + N
  uint64_t data_bytes = 0;    // file size - data_offset

  const TensorEntry* find(const std::string& name) const;
};

// Largest header we accept: real files have headers of a few hundred KB.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

// Parses and validates a complete file image. `origin` prefixes error messages.
SafetensorsIndex parse_safetensors(const uint8_t* data, std::size_t size, const std::string& origin);

// Formats a shape as "[a,b,c]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace kvs::io
