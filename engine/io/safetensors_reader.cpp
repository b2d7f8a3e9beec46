#include "engine/io/safetensors_reader.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cstring>

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
    case DType::I8: return at::kChar;
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
    case at::kChar: return DType::I8;
    default: break;
  }
  throw FormatError(std::string("tensor dtype ") + c10::toString(type) +
                    " cannot be stored (supported: F32, F16, BF16, I64, I32, U8, I8)");
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
  if (entry->row_scaled) return decode_row_scaled(*entry);
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

std::pair<at::Tensor, at::Tensor> SafetensorsReader::row_scaled_parts(const std::string& name) const {
  const TensorEntry* entry = index_.find(name);
  if (entry == nullptr || !entry->row_scaled)
    throw FormatError("file " + path() + ": has no row-scaled I8 tensor named '" + name + "'");
  const uint8_t* base = file_->data() + index_.data_offset;
  // Copies: the data section guarantees no alignment for the F32 scales.
  at::Tensor scale = at::empty({entry->shape[0]}, at::kFloat);
  if (entry->scale_end > entry->scale_begin)  // an empty tensor's data pointer may be null
    std::memcpy(scale.data_ptr<float>(), base + entry->scale_begin, entry->scale_end - entry->scale_begin);
  at::Tensor stored = at::empty(entry->shape, at::kChar);
  if (entry->numel() > 0) std::memcpy(stored.data_ptr<int8_t>(), base + entry->begin, entry->nbytes());
  return {stored, scale};
}

at::Tensor SafetensorsReader::decode_row_scaled(const TensorEntry& entry) const {
  auto [stored, scale] = row_scaled_parts(entry.name);
  if (!at::isfinite(scale).all().item<bool>() || (scale < 0).any().item<bool>())
    throw FormatError("file " + path() + ": tensor '" + entry.name + std::string(kRowScaleSuffix) +
                      "' holds a negative or non-finite scale");
  std::vector<int64_t> scale_shape(entry.shape.size(), 1);
  scale_shape[0] = entry.shape[0];
  return stored.to(at::kFloat).mul_(scale.view(scale_shape));
}

}  // namespace kvs::io
