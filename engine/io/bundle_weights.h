#pragma once
// What every bundle writer shares — the converters of official checkpoints,
// create-random's untrained bundles and kvstudio-train's exports: the stored
// weight type, a family's tensors under its prefix (checked against the names
// its loader expects) and the bundle's two files written together.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/io/safetensors_writer.h"
#include "engine/io/tensor_spec.h"

namespace kvs::io {

// "f32" | "f16" | "bf16" (InvalidArgumentError otherwise).
at::ScalarType parse_weights_dtype(const std::string& name);
// The converters' choice: the same, or "keep" (nullopt: each tensor as stored).
std::optional<at::ScalarType> parse_converted_dtype(const std::string& name);

ShapeMap shapes_of(const std::map<std::string, at::Tensor>& weights);

// Appends every `expected` tensor of `weights` as prefix + name, contiguous, in
// `dtype` (nullopt: unchanged); ModelMismatchError naming `origin` when one is
// missing.
void add_prefixed(NamedTensors& out, const std::map<std::string, at::Tensor>& weights,
                  const std::vector<ExpectedTensor>& expected, const std::string& prefix,
                  std::optional<at::ScalarType> dtype, const std::string& origin);

// Provenance of create-random's untrained bundles.
nlohmann::json random_init_provenance(uint64_t seed);

// Creates `dir` and writes DIR/weights.safetensors (header format kvstudio and
// the manifest's family) and DIR/model.json. Returns the weight bytes written.
int64_t write_bundle(const std::string& dir, const nlohmann::json& manifest, const NamedTensors& tensors);

}  // namespace kvs::io
