#include "engine/io/bundle_loading.h"

#include <algorithm>

#include "engine/core/errors.h"

namespace kvs::io {

void require_family(const ModelBundle& bundle, const std::string& family) {
  if (bundle.family() != family)
    throw ModelMismatchError("model " + bundle.dir + ": family '" + bundle.family() + "' is not " + family);
}

void parse_manifest_sections(const ModelBundle& bundle, const std::string& sections,
                             const std::function<void()>& parse) {
  try {
    parse();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("model " + bundle.dir + "/model.json: missing " + sections + " section (" + e.what() + ")");
  } catch (const InvalidArgumentError& e) {
    throw FormatError("model " + bundle.dir + "/model.json: " + e.what());
  }
}

std::shared_ptr<SafetensorsReader> open_family_weights(const ModelBundle& bundle, const std::string& family,
                                                       const std::string& sections,
                                                       const std::function<void()>& parse) {
  require_family(bundle, family);
  parse_manifest_sections(bundle, sections, parse);
  return SafetensorsReader::open(bundle.weights_path(), TensorMemory::OwnedCopy);
}

std::vector<std::string> checked_class_names(const ModelBundle& bundle, int64_t num_classes) {
  std::vector<std::string> names = bundle.class_names();
  if (!names.empty() && static_cast<int64_t>(names.size()) != num_classes)
    throw FormatError("model " + bundle.dir + "/model.json: " + std::to_string(names.size()) + " class_names for " +
                      std::to_string(num_classes) + " classes");
  return names;
}

ShapeMap shapes_of(const SafetensorsReader& reader) {
  ShapeMap shapes;
  for (const auto& e : reader.index().tensors) shapes[e.name] = e.shape;
  return shapes;
}

std::map<std::string, at::Tensor> tensors_with_prefix(const SafetensorsReader& reader, const std::string& prefix) {
  std::map<std::string, at::Tensor> out;
  for (const auto& e : reader.index().tensors)
    if (e.name.rfind(prefix, 0) == 0) out[e.name.substr(prefix.size())] = reader.tensor(e.name);
  return out;
}

void require_floating_tensors(const SafetensorsReader& reader, const std::vector<std::string>& integer_buffers) {
  for (const auto& e : reader.index().tensors) {
    if (e.decodes_to_float() ||
        std::find(integer_buffers.begin(), integer_buffers.end(), e.name) != integer_buffers.end())
      continue;
    throw ModelMismatchError("file " + reader.path() + ": tensor " + e.name + " has dtype " + dtype_name(e.dtype) +
                             ", expected a floating-point type");
  }
}

nlohmann::json family_manifest(const std::string& name, const std::string& family, const std::string& architecture_key,
                               const nlohmann::json& architecture, const nlohmann::json& tokenizer,
                               const nlohmann::json& provenance) {
  return {{"format", "kvstudio-bundle"},
          {"format_version", kBundleFormatVersion},
          {"name", name},
          {"family", family},
          {"architecture", {{architecture_key, architecture}}},
          {"tokenizer", tokenizer},
          {"files", {{"weights", "weights.safetensors"}}},
          {"provenance", provenance}};
}

}  // namespace kvs::io
