#include "engine/models/janus/janus_converter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/tensor_spec.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_weights.h"

namespace kvs::janus {
namespace {

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

// The weight files of the folder, in a stable order: those an index names, or
// the single file of either format.
std::vector<fs::path> weight_files(const fs::path& dir) {
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
                  "shards as Hugging Face stores Janus-Pro");
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> janus_tokenizer_file_names() {
  return {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"};
}

JanusConvertReport convert_janus_checkpoint(const JanusConvertOptions& options,
                                            const std::function<void(double, const std::string&)>& progress) {
  const fs::path dir(options.checkpoint);
  if (!fs::is_directory(dir))
    throw FileError("--checkpoint " + options.checkpoint +
                    " is not a folder (Janus-Pro converts from the downloaded Hugging Face folder)");
  if (options.out_dir.empty()) throw InvalidArgumentError("--out is required");
  const std::optional<at::ScalarType> dtype = io::parse_converted_dtype(options.weights_dtype);
  JanusConvertReport report;
  report.config = janus_config_from_hf(read_json_file(dir / "config.json"));
  if (!fs::exists(dir / "tokenizer.json"))
    throw FileError(dir.string() + " has no tokenizer.json (download the whole model folder)");

  // Every tensor of every shard: the generation tensors are kept (checked
  // against the config below), the parts generation never uses are dropped, and
  // anything else means this is not the checkpoint the config describes.
  std::map<std::string, at::Tensor> kept;
  std::vector<std::shared_ptr<io::SafetensorsReader>> readers;  // keep the mapped shards alive
  const auto files = weight_files(dir);
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path& file = files[i];
    if (progress) progress(static_cast<double>(i) / files.size(), "reading " + file.filename().string());
    report.weight_files.push_back(file.filename().string());
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    if (ends_with(file.string(), ".safetensors")) {
      auto reader = io::SafetensorsReader::open(file.string());
      for (const auto& name : reader->names()) tensors.emplace_back(name, reader->tensor(name));
      readers.push_back(std::move(reader));
    } else {
      tensors = io::read_torch_state_dict(file.string(), "checkpoint shard");
    }
    for (auto& [name, tensor] : tensors) {
      if (is_unused_janus_key(name)) {
        ++report.tensors_dropped;
        continue;
      }
      if (!kept.emplace(name, tensor).second)
        throw FormatError(file.string() + ": tensor " + name + " appears in more than one shard");
    }
  }
  // Strict: every expected tensor present with its shape, nothing unexpected
  // (a mismatch means this is not the checkpoint config.json describes).
  io::check_tensor_set(io::shapes_of(kept), janus_expected_tensors(report.config), "checkpoint " + dir.string());
  io::NamedTensors out;
  io::add_prefixed(out, kept, janus_expected_tensors(report.config), "", dtype, "checkpoint " + dir.string());
  for (const auto& [name, tensor] : out) {
    if (!at::isFloatingType(tensor.scalar_type()))
      throw FormatError("checkpoint " + dir.string() + ": tensor " + name + " is not floating point");
  }
  if (progress) progress(0.9, "writing the bundle");
  const std::string name = options.name.empty() ? dir.filename().string() : options.name;
  nlohmann::json provenance = {{"source", "converted from the official Hugging Face folder"},
                               {"checkpoint", fs::absolute(dir).string()},
                               {"weight_files", report.weight_files}};
  report.bytes_written = io::write_bundle(options.out_dir, janus_manifest(name, report.config, provenance), out);
  report.tensors_written = static_cast<int64_t>(out.size());
  const fs::path tokenizer_dir = fs::path(options.out_dir) / "tokenizer";
  fs::create_directories(tokenizer_dir);
  for (const std::string& file : janus_tokenizer_file_names())
    if (fs::exists(dir / file)) fs::copy_file(dir / file, tokenizer_dir / file, fs::copy_options::overwrite_existing);
  if (progress) progress(1.0, "done");
  return report;
}

}  // namespace kvs::janus
