#pragma once
// Reading a model folder as Hugging Face stores it (what the converters of
// downloaded folders share: Janus-Pro, Lumina-mGPT): its JSON files with errors
// that name them, and its weight files — the shards model.safetensors.index.json
// or pytorch_model.bin.index.json names, or the single file of either format.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvs::io {

// FileError when unreadable, FormatError naming the file when not JSON.
nlohmann::json read_json_file(const std::filesystem::path& path);

// The folder's weight files in a stable order. FileError naming the folder (and
// `model`, e.g. "Janus-Pro", in the message) when there are none, or naming a
// shard the index lists but the folder lacks; FormatError for an index without
// a weight_map or one that names a file outside the folder.
std::vector<std::filesystem::path> hf_weight_files(const std::filesystem::path& dir, const std::string& model);

class SafetensorsReader;

// Every tensor of a folder's weight files (hf_weight_files), by name: safetensors
// shards memory-mapped (the readers are kept alive with the tensors, nothing is
// copied), pytorch_model*.bin shards through the torch.save reader.
struct HfShardTensors {
  std::map<std::string, at::Tensor> tensors;  // the ones `unused` did not drop
  std::vector<std::string> files;             // file names, in reading order
  int64_t dropped = 0;                        // tensors `unused` dropped
  std::vector<std::shared_ptr<SafetensorsReader>> readers;
};

// FormatError when a tensor appears in two shards. `progress(i, n, file)` is
// told before each of the n files is read.
HfShardTensors read_hf_shards(const std::filesystem::path& dir, const std::string& model,
                              const std::function<bool(const std::string& name)>& unused,
                              const std::function<void(size_t i, size_t n, const std::string& file)>& progress = {});

}  // namespace kvs::io
