#include "engine/io/row_scaled_int8.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"

namespace kvs::io {
namespace {

bool has_prefix(const std::string& name, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

std::pair<at::Tensor, at::Tensor> encode_row_scaled(const at::Tensor& weights) {
  if (weights.dim() < 1) throw InvalidArgumentError("row-scaled storage needs a tensor with rows, not a scalar");
  if (weights.numel() == 0) return {at::empty(weights.sizes(), at::kChar), at::zeros({weights.size(0)}, at::kFloat)};
  const at::Tensor rows = weights.detach().to(at::kCPU, at::kFloat).contiguous().reshape({weights.size(0), -1});
  if (!at::isfinite(rows).all().item<bool>())
    throw InvalidArgumentError("row-scaled storage of a tensor with non-finite values");
  const at::Tensor scale = rows.abs().amax(1) / 127.0f;
  // All-zero rows keep scale 0 and store zeros.
  const at::Tensor divisor = at::where(scale > 0, scale, at::ones_like(scale));
  const at::Tensor q = at::round(rows / divisor.unsqueeze(1)).clamp_(-127, 127).to(at::kChar);
  return {q.reshape(weights.sizes()).contiguous(), scale.contiguous()};
}

RowScaledStoreResult store_row_scaled(const std::string& bundle_dir, const std::vector<std::string>& prefixes,
                                      const std::string& command) {
  if (prefixes.empty()) throw InvalidArgumentError("row-scaled storage: name at least one tensor prefix");
  ModelBundle bundle = ModelBundle::open(bundle_dir);
  const std::string path = bundle.weights_path();
  RowScaledStoreResult result;
  result.bytes_before = static_cast<int64_t>(std::filesystem::file_size(path));
  NamedTensors out;
  {
    const auto reader = SafetensorsReader::open(path, TensorMemory::OwnedCopy);
    bool any_prefix_match = false;
    for (const TensorEntry& e : reader->index().tensors) {
      const bool selected = has_prefix(e.name, prefixes);
      any_prefix_match = any_prefix_match || selected;
      if (e.row_scaled) {
        auto [stored, scale] = reader->row_scaled_parts(e.name);
        out.emplace_back(e.name, stored);
        out.emplace_back(e.name + kRowScaleSuffix, scale);
      } else if (selected && e.decodes_to_float() && e.shape.size() >= 2 &&
                 static_cast<int64_t>(e.numel()) >= kRowScaledMinElements) {
        auto [stored, scale] = encode_row_scaled(reader->tensor(e.name));
        out.emplace_back(e.name, stored);
        out.emplace_back(e.name + kRowScaleSuffix, scale);
        result.converted.push_back(e.name);
      } else {
        out.emplace_back(e.name, reader->tensor(e.name));
      }
    }
    if (!any_prefix_match)
      throw InvalidArgumentError("row-scaled storage: no tensor of " + path + " starts with the given prefixes");
    write_safetensors(path, out, reader->index().metadata);
  }
  result.tensors_converted = static_cast<int64_t>(result.converted.size());
  result.bytes_after = static_cast<int64_t>(std::filesystem::file_size(path));
  if (result.tensors_converted > 0) {
    nlohmann::json& storage = bundle.manifest["provenance"]["weights_storage"];
    storage["encoding"] = "row-scaled int8 (int8 values, one float32 scale per output row)";
    nlohmann::json all_prefixes = storage.value("prefixes", nlohmann::json::array());
    for (const auto& p : prefixes)
      if (std::find(all_prefixes.begin(), all_prefixes.end(), p) == all_prefixes.end()) all_prefixes.push_back(p);
    storage["prefixes"] = all_prefixes;
    storage["min_elements"] = kRowScaledMinElements;
    storage["tensors"] = storage.value("tensors", 0) + result.tensors_converted;
    storage["file_bytes_before"] = storage.value("file_bytes_before", result.bytes_before);
    storage["file_bytes_after"] = result.bytes_after;
    storage["command"] = command;
    write_bundle_manifest(bundle.dir, bundle.manifest);
  }
  return result;
}

}  // namespace kvs::io
