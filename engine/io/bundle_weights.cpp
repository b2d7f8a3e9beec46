#include "engine/io/bundle_weights.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"

namespace kvs::io {
namespace fs = std::filesystem;

at::ScalarType parse_weights_dtype(const std::string& name) {
  if (name == "f32") return at::kFloat;
  if (name == "f16") return at::kHalf;
  if (name == "bf16") return at::kBFloat16;
  throw InvalidArgumentError("unknown weights dtype '" + name + "' (expected f32, f16 or bf16)");
}

std::optional<at::ScalarType> parse_converted_dtype(const std::string& name) {
  if (name == "keep") return std::nullopt;
  if (name == "f32" || name == "f16" || name == "bf16") return parse_weights_dtype(name);
  throw InvalidArgumentError("unknown weights dtype '" + name + "' (expected keep, f32, f16 or bf16)");
}

ShapeMap shapes_of(const std::map<std::string, at::Tensor>& weights) {
  ShapeMap shapes;
  for (const auto& [name, t] : weights) shapes[name] = t.sizes().vec();
  return shapes;
}

void add_prefixed(NamedTensors& out, const std::map<std::string, at::Tensor>& weights,
                  const std::vector<ExpectedTensor>& expected, const std::string& prefix,
                  std::optional<at::ScalarType> dtype, const std::string& origin) {
  for (const auto& e : expected) {
    auto it = weights.find(e.name);
    if (it == weights.end()) throw ModelMismatchError(origin + ": missing tensor " + e.name);
    out.emplace_back(prefix + e.name, (dtype ? it->second.to(*dtype) : it->second).contiguous());
  }
}

nlohmann::json random_init_provenance(uint64_t seed) {
  return {{"source", "random initialisation"},
          {"seed", seed},
          {"created_by", "kvstudio-cli create-random"},
          {"note", "untrained: images are structured noise"}};
}

int64_t write_bundle(const std::string& dir, const nlohmann::json& manifest, const NamedTensors& tensors) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError("folder " + dir + ": cannot create (" + ec.message() + ")");
  write_safetensors((fs::path(dir) / "weights.safetensors").string(), tensors,
                    {{"format", "kvstudio"}, {"family", manifest.at("family").get<std::string>()}});
  write_bundle_manifest(dir, manifest);
  int64_t bytes = 0;
  for (const auto& [name, t] : tensors) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}

}  // namespace kvs::io
