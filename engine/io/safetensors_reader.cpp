#include "engine/io/safetensors_reader.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace kvs::io {

c10::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::F32: return at::kFloat;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::I64: return at::kLong;
    case DType::I32: return at::kInt;
    case DType::U8: return at::kByte;
  }
  return at::kFloat;
}

DType from_scalar_type(c10::ScalarType type) {
  switch (type) {
    case at::kFloat: return DType::F32;
    case at::kHalf: return DType::F16;
    case at::kBFloat16: return DType::BF16;
    case at::kLong: return DType::I64;
    case at::kInt: return DType::I32;
    case at::kByte: return DType::U8;
    default: break;
  }
  throw FormatError(std::string("tensor dtype ") + c10::toString(type) +
                    " cannot be stored (supported: F32, F16, BF16, I64, I32, U8)");
}

std::shared_ptr<SafetensorsReader> SafetensorsReader::open(const std::string& path, TensorMemory memory) {
  auto reader = std::make_shared<SafetensorsReader>();
  reader->memory_ = memory;
  reader->file_ = MappedFile::open(path);
  reader->index_ = parse_safetensors(reader->file_->data(), reader->file_->size(), path);
  return reader;
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  out.reserve(index_.tensors.size());
  for (const auto& t : index_.tensors) out.push_back(t.name);
  return out;
}

at::Tensor SafetensorsReader::tensor(const std::string& name) const {
  const TensorEntry* entry = index_.find(name);
  if (entry == nullptr) throw FormatError("file " + path() + ": has no tensor named '" + name + "'");
  const auto options = at::TensorOptions().dtype(to_scalar_type(entry->dtype));
  if (entry->numel() == 0) return at::empty(entry->shape, options);
  uint8_t* ptr = file_->mutable_data() + index_.data_offset + entry->begin;
  const std::size_t align = dtype_size(entry->dtype);
  auto keep_alive = file_;
  at::Tensor view = at::from_blob(
      ptr, entry->shape, [keep_alive](void*) {}, options);
  if (memory_ == TensorMemory::OwnedCopy || reinterpret_cast<uintptr_t>(ptr) % align != 0) return view.clone();
  return view;
}

}  // namespace kvs::io
