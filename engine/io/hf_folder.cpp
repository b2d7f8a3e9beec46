#include "engine/io/hf_folder.h"

#include <fstream>
#include <set>

#include "engine/core/errors.h"

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

}  // namespace kvs::io
