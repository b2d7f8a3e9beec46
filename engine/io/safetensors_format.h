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
//
// Row-scaled 8-bit storage (KV Studio's own convention, used for the generators
// of the shipped demo bundles): a tensor NAME stored as I8 beside an F32 tensor
// "NAME::row_scale" of shape [rows] stands for the float tensor
// NAME[r, ...] = int8[r, ...] * row_scale[r]. The parser folds each pair into one
// entry (the scale tensor is not listed on its own) and refuses a scale tensor
// without its I8 partner or of the wrong type or shape; an I8 tensor without a
// scale stays a plain integer tensor. "::" cannot occur in a PyTorch parameter
// name, so the convention cannot collide with a real tensor.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kvs::io {

enum class DType { F32, F16, BF16, I64, I32, U8, I8 };

// Suffix of a row-scaled I8 tensor's scale tensor.
inline constexpr const char* kRowScaleSuffix = "::row_scale";

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
  // Row-scaled I8 storage: the span of the F32 [rows] scale tensor.
  bool row_scaled = false;
  uint64_t scale_begin = 0;
  uint64_t scale_end = 0;
  // Floating-point once read: F32/F16/BF16, or row-scaled I8.
  bool decodes_to_float() const;
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
