#pragma once
// Tensors from a validated safetensors file, mapped without copying: each tensor
// keeps the file mapping alive. Misaligned data (allowed by the format) is copied.
// A loaded model asks for copies instead (TensorMemory::OwnedCopy): a view of a
// mapped file faults (SIGBUS) when the file is truncated or replaced by a
// shorter one while the model is open, and a window keeps models open for hours.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/mapped_file.h"
#include "engine/io/safetensors_format.h"

namespace kvs::io {

enum class TensorMemory {
  MappedView,  // tensors read the file's mapping (datasets, inspection, conversion)
  OwnedCopy,   // tensors own their bytes (weights of a model that stays loaded)
};

class SafetensorsReader {
 public:
  // Throws FileError / FormatError with the path in the message.
  static std::shared_ptr<SafetensorsReader> open(const std::string& path,
                                                 TensorMemory memory = TensorMemory::MappedView);

  const std::string& path() const { return file_->path(); }
  const SafetensorsIndex& index() const { return index_; }
  bool contains(const std::string& name) const { return index_.find(name) != nullptr; }
  std::vector<std::string> names() const;

  // The tensor as stored (CPU, stored dtype); a row-scaled I8 tensor comes back
  // decoded, as an owned F32 tensor. Throws FormatError if absent.
  at::Tensor tensor(const std::string& name) const;
  // A row-scaled I8 tensor as stored: (int8 values, F32 [rows] scales), owned.
  // FormatError if absent or not row-scaled.
  std::pair<at::Tensor, at::Tensor> row_scaled_parts(const std::string& name) const;

 private:
  at::Tensor decode_row_scaled(const TensorEntry& entry) const;

  std::shared_ptr<MappedFile> file_;
  SafetensorsIndex index_;
  TensorMemory memory_ = TensorMemory::MappedView;
};

c10::ScalarType to_scalar_type(DType dtype);
DType from_scalar_type(c10::ScalarType type);  // throws FormatError for unsupported types

}  // namespace kvs::io
