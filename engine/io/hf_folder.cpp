#include "engine/io/hf_folder.h"

#include <fstream>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/torch_checkpoint.h"

namespace kvs::io {

namespace fs = std::filesystem;

nlohmann::json read_json_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw FileError("cannot read " + path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string() + ": not valid JSON (" + std::string(e.what()) + ")");
  }
}

std::vector<fs::path> hf_weight_files(const fs::path& dir, const std::string& model) {
  for (const char* index : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
    const fs::path path = dir / index;
    if (!fs::exists(path)) continue;
    const nlohmann::json j = read_json_file(path);
    if (!j.contains("weight_map") || !j.at("weight_map").is_object())
      throw FormatError(path.string() + ": no weight_map object");
    std::set<std::string> files;
    for (const auto& [tensor, file] : j.at("weight_map").items()) {
      if (!file.is_string()) throw FormatError(path.string() + ": weight_map entry " + tensor + " is not a file name");
      const std::string name = file.get<std::string>();
      if (name.find('/') != std::string::npos || name.find("..") != std::string::npos)
        throw FormatError(path.string() + ": weight_map names a file outside the folder: " + name);
      files.insert(name);
    }
    std::vector<fs::path> out;
    for (const auto& f : files) {
      if (!fs::exists(dir / f))
        throw FileError(path.string() + " names " + f + ", which is missing from " + dir.string());
      out.push_back(dir / f);
    }
    if (out.empty()) throw FormatError(path.string() + ": the weight_map is empty");
    return out;
  }
  for (const char* single : {"model.safetensors", "pytorch_model.bin"})
    if (fs::exists(dir / single)) return {dir / single};
  throw FileError(dir.string() +
                  " has no weights: expected model.safetensors(.index.json) or pytorch_model(.bin.index.json) "
                  "shards as Hugging Face stores " +
                  model);
}

HfShardTensors read_hf_shards(const fs::path& dir, const std::string& model,
                              const std::function<bool(const std::string& name)>& unused,
                              const std::function<void(size_t i, size_t n, const std::string& file)>& progress) {
  HfShardTensors out;
  const auto files = hf_weight_files(dir, model);
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path& file = files[i];
    if (progress) progress(i, files.size(), file.filename().string());
    out.files.push_back(file.filename().string());
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    if (file.extension() == ".safetensors") {
      auto reader = SafetensorsReader::open(file.string());
      for (const auto& name : reader->names()) tensors.emplace_back(name, reader->tensor(name));
      out.readers.push_back(std::move(reader));
    } else {
      tensors = read_torch_state_dict(file.string(), "checkpoint shard");
    }
    for (auto& [name, tensor] : tensors) {
      if (unused(name)) {
        ++out.dropped;
        continue;
      }
      if (!out.tensors.emplace(name, tensor).second)
        throw FormatError(file.string() + ": tensor " + name + " appears in more than one shard");
    }
  }
  return out;
}

}  // namespace kvs::io
