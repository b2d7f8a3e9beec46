#include "engine/io/torch_checkpoint.h"

#include <ATen/Functions.h>

#include <cstdint>
#include <filesystem>
#include <memory>

#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/io/torch_checkpoint_index.h"

namespace kvs::io {
namespace {

c10::ScalarType scalar_type(CheckpointDType dtype) {
  switch (dtype) {
    case CheckpointDType::F32: return at::kFloat;
    case CheckpointDType::F64: return at::kDouble;
    case CheckpointDType::F16: return at::kHalf;
    case CheckpointDType::BF16: return at::kBFloat16;
    case CheckpointDType::I64: return at::kLong;
    case CheckpointDType::I32: return at::kInt;
    case CheckpointDType::I16: return at::kShort;
    case CheckpointDType::I8: return at::kChar;
    case CheckpointDType::U8: return at::kByte;
    case CheckpointDType::Bool: return at::kBool;
  }
  return at::kByte;
}

// A storage record as a flat tensor over the mapped file (copy-on-write, so an
// in-place change never reaches the file); a record that is not aligned for its
// element type is copied instead. The index has checked its size and place.
at::Tensor storage_tensor(const std::shared_ptr<MappedFile>& file, const CheckpointStorage& s) {
  const auto options = at::TensorOptions().dtype(scalar_type(s.dtype));
  if (s.numel == 0) return at::empty({0}, options);
  uint8_t* ptr = file->mutable_data() + s.data_offset;
  auto keep_alive = file;
  at::Tensor flat = at::from_blob(
      ptr, {s.numel}, [keep_alive](void*) {}, options);
  if (reinterpret_cast<uintptr_t>(ptr) % checkpoint_dtype_size(s.dtype) != 0) return flat.clone();
  return flat;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> read_torch_state_dict(const std::string& path,
                                                                      const std::string& what) {
  return read_torch_state_dict_under(path, what, {"model", "module", "state_dict"}).tensors;
}

TorchStateDict read_torch_state_dict_under(const std::string& path, const std::string& what,
                                           const std::vector<std::string>& keys) {
  namespace fs = std::filesystem;
  const std::string origin = what + " " + path;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw FileError(origin + ": does not exist");
  if (fs::is_directory(path, ec)) throw FileError(origin + ": is a directory, expected a file");
  const std::shared_ptr<MappedFile> file = MappedFile::open(path);
  const CheckpointIndex index = index_torch_checkpoint(file->data(), file->size(), origin, keys);

  std::vector<at::Tensor> storages;
  storages.reserve(index.storages.size());
  for (const CheckpointStorage& s : index.storages) storages.push_back(storage_tensor(file, s));
  TorchStateDict result;
  result.selected_key = index.selected_key;
  result.tensors.reserve(index.tensors.size());
  for (const CheckpointTensor& t : index.tensors)
    result.tensors.emplace_back(t.name, storages[t.storage].as_strided(t.sizes, t.strides, t.offset));
  return result;
}

}  // namespace kvs::io
