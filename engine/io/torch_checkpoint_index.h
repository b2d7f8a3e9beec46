#pragma once
// What a torch.save checkpoint holds, worked out and checked without LibTorch so
// that it can be fuzzed on its own: the zip container (zip_archive.h), data.pkl
// run by the bounded pickle machine (pickle_machine.h), and for every entry of
// the selected state dict its storage record, element type, shape, strides and
// offset. Everything a tensor built from it could touch is checked against the
// file here: the record exists and has exactly numel x element size bytes (a
// storage larger than its record is refused, the product overflow-checked),
// every element a view can address lies inside its storage (shape x stride
// overflow included), one record is not used with two types or sizes, bools are
// 0 or 1, records match their CRC-32. torch_checkpoint.cpp only turns the result
// into at::Tensors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvs::io {

// The element types a checkpoint's storages may have (torch.FloatStorage or
// torch.float32, ...); anything else is refused when a selected tensor uses it.
enum class CheckpointDType { F32, F64, F16, BF16, I64, I32, I16, I8, U8, Bool };

const char* checkpoint_dtype_name(CheckpointDType dtype);  // "float32", ...
std::size_t checkpoint_dtype_size(CheckpointDType dtype);  // bytes per element

struct CheckpointStorage {
  std::string key;  // the record data/<key>
  CheckpointDType dtype = CheckpointDType::F32;
  int64_t numel = 0;
  uint64_t data_offset = 0;  // of the record's bytes in the file
  uint64_t nbytes = 0;       // numel x element size, the record's size
};

struct CheckpointTensor {
  std::string name;         // the state dict's key
  std::size_t storage = 0;  // index into CheckpointIndex::storages
  int64_t offset = 0;       // in elements
  std::vector<int64_t> sizes, strides;
};

struct CheckpointIndex {
  std::string selected_key;                 // "" = the top-level dict
  std::vector<CheckpointStorage> storages;  // each record once, in order of first use
  std::vector<CheckpointTensor> tensors;    // in the state dict's order
};

// `data`/`size`: a whole file. The state dict is the dict under the first of
// `keys` whose value is a dict (a key holding None or a non-dict is passed
// over), else the top-level dict; each of its entries must have a string key
// and a tensor value. Throws FormatError "<origin>: <problem>", one line.
CheckpointIndex index_torch_checkpoint(const uint8_t* data, std::size_t size, const std::string& origin,
                                       const std::vector<std::string>& keys);

}  // namespace kvs::io
