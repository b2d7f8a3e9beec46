#pragma once
// What every family's model loader shares, the reading side of bundle_weights.h:
// the load path itself (family check, model.json's sections parsed with errors
// that name the file, the weights opened as owned copies), class names checked
// against the model's class count, the weights split by prefix, only floating
// tensors accepted, and the manifest a family's bundle is written with.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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

// The first half of every family's load: ModelMismatchError unless the bundle is
// a `family` bundle, then `parse` run over model.json (as parse_manifest_sections),
// then weights.safetensors opened as owned copies, so that a loaded model does not
// fault if its file changes while it is open. The family builds its network from
// the reader.
std::shared_ptr<SafetensorsReader> open_family_weights(const ModelBundle& bundle, const std::string& family,
                                                       const std::string& sections, const std::function<void()>& parse);

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
