#pragma once
// What the three families' model loaders (LlamaGen, VAR, MAR) share, the reading
// side of bundle_weights.h: the family check, model.json's architecture and
// tokenizer sections parsed with errors that name the file, class names checked
// against the model's class count, the weights split by prefix, only floating
// tensors accepted, and the manifest a family's bundle is written with.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/tensor_spec.h"

namespace kvs::io {

// ModelMismatchError unless the bundle's family is `family`.
void require_family(const ModelBundle& bundle, const std::string& family);

// Runs `parse` (which reads model.json's sections); a missing section or a bad
// value becomes a FormatError naming model.json and `sections` ("architecture.var
// or tokenizer").
void parse_manifest_sections(const ModelBundle& bundle, const std::string& sections,
                             const std::function<void()>& parse);

// The bundle's class names (may be empty); FormatError when there are some but
// not `num_classes` of them.
std::vector<std::string> checked_class_names(const ModelBundle& bundle, int64_t num_classes);

// Every tensor's shape, by name (for check_tensor_set).
ShapeMap shapes_of(const SafetensorsReader& reader);

// The tensors named "<prefix>name", keyed by name without the prefix.
std::map<std::string, at::Tensor> tensors_with_prefix(const SafetensorsReader& reader, const std::string& prefix);

// ModelMismatchError for a tensor stored as anything but f32/f16/bf16 or
// row-scaled I8, except
// the ones named in `integer_buffers` (e.g. VAR's level index buffer).
void require_floating_tensors(const SafetensorsReader& reader, const std::vector<std::string>& integer_buffers = {});

// model.json of a `family` bundle: the architecture under `architecture_key`
// ("gpt", "var", "mar"), the tokenizer, weights.safetensors and the provenance.
nlohmann::json family_manifest(const std::string& name, const std::string& family, const std::string& architecture_key,
                               const nlohmann::json& architecture, const nlohmann::json& tokenizer,
                               const nlohmann::json& provenance);

}  // namespace kvs::io
