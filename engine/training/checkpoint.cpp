#include "engine/training/checkpoint.h"

#include <ATen/Functions.h>

#include <cstdio>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/mapped_file.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"

namespace kvs::training {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifest = "checkpoint.json";

std::string weights_file_name(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "checkpoint-%08lld.safetensors", static_cast<long long>(step));
  return name;
}

// Training state is float32 whatever the file stores.
std::map<std::string, at::Tensor> float_tensors_with_prefix(const io::SafetensorsReader& r, const std::string& prefix) {
  std::map<std::string, at::Tensor> out = io::tensors_with_prefix(r, prefix);
  for (auto& entry : out) entry.second = entry.second.to(at::kFloat);
  return out;
}

}  // namespace

void save_checkpoint(const std::string& dir, const ParameterSet& params, const AdamW* optimizer, int64_t step,
                     nlohmann::json meta) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError("folder " + dir + ": cannot create (" + ec.message() + ")");
  io::NamedTensors tensors;
  for (const auto& p : params.items()) tensors.emplace_back("model." + p.name, p.tensor.detach().to(at::kCPU));
  if (optimizer)
    for (const auto& [name, t] : optimizer->state_tensors()) tensors.emplace_back("optim." + name, t.to(at::kCPU));
  const std::string file = weights_file_name(step);
  io::write_safetensors((fs::path(dir) / file).string(), tensors, {{"format", "kvstudio-checkpoint"}});
  meta["step"] = step;
  meta["weights"] = file;
  meta["optimizer_steps"] = optimizer ? optimizer->steps_taken() : 0;
  io::write_file_atomic((fs::path(dir) / kManifest).string(), meta.dump(2) + "\n");
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0 && name != file && entry.path().extension() == ".safetensors")
      fs::remove(entry.path(), ec);
  }
}

std::optional<nlohmann::json> read_checkpoint_manifest(const std::string& dir) {
  const fs::path path = fs::path(dir) / kManifest;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    return nlohmann::json::parse(io::read_text_file(path.string()));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

namespace {

std::shared_ptr<io::SafetensorsReader> open_weights(const std::string& dir, nlohmann::json& manifest) {
  auto m = read_checkpoint_manifest(dir);
  if (!m) throw FileError("folder " + dir + ": no training checkpoint (" + kManifest + ") here");
  manifest = *m;
  if (!manifest.contains("weights") || !manifest["weights"].is_string())
    throw FormatError("file " + (fs::path(dir) / kManifest).string() + ": missing string field \"weights\"");
  return io::SafetensorsReader::open((fs::path(dir) / manifest["weights"].get<std::string>()).string());
}

}  // namespace

nlohmann::json load_checkpoint(const std::string& dir, ParameterSet& params, AdamW* optimizer) {
  nlohmann::json manifest;
  auto reader = open_weights(dir, manifest);
  params.copy_from(float_tensors_with_prefix(*reader, "model."), reader->path());
  if (optimizer)
    optimizer->load_state(float_tensors_with_prefix(*reader, "optim."), manifest.value("optimizer_steps", 0),
                          reader->path());
  return manifest;
}

std::map<std::string, at::Tensor> load_checkpoint_weights(const std::string& dir, nlohmann::json* manifest) {
  nlohmann::json m;
  auto reader = open_weights(dir, m);
  if (manifest) *manifest = m;
  return float_tensors_with_prefix(*reader, "model.");
}

}  // namespace kvs::training
