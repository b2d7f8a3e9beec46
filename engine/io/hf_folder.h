#pragma once
// Reading a model folder as Hugging Face stores it (what the converters of
// downloaded folders share: Janus-Pro, Lumina-mGPT): its JSON files with errors
// that name them, and its weight files — the shards model.safetensors.index.json
// or pytorch_model.bin.index.json names, or the single file of either format.
#include <nlohmann/json.hpp>

#include <filesystem>
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

}  // namespace kvs::io
