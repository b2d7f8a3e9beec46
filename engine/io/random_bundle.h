#pragma once
// create-random's untrained bundles, written once for every family: each part of
// the network (its tensors under a prefix and the rule that draws them) drawn in
// order from one seeded generator, stored in the chosen weight type, and written
// with the family's manifest. A family supplies only its parts and its draws.
#include <nlohmann/json.hpp>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"

namespace kvs::io {

// Draws one tensor in float32 (the writer casts it to the bundle's type).
using TensorDraw = std::function<at::Tensor(const ExpectedTensor&, at::Generator&)>;

struct RandomBundlePart {
  std::string prefix;                   // "gpt.", "vae.", "" ...
  std::vector<ExpectedTensor> tensors;  // names without the prefix
  TensorDraw draw;
};

// Draws the parts' tensors in order from a CPU generator seeded `seed` (the same
// seed gives the same bundle on every machine), casts them to `weights_dtype`
// ("f32" | "f16" | "bf16") and writes DIR/weights.safetensors and DIR/model.json.
// Returns the weight bytes written.
int64_t write_random_bundle(const std::string& dir, const nlohmann::json& manifest,
                            const std::vector<RandomBundlePart>& parts, uint64_t seed,
                            const std::string& weights_dtype);

// The product of every dimension but the first: a matrix's or convolution's
// inputs per output, for draws scaled to keep activations O(1).
int64_t fan_in(const ExpectedTensor& tensor);

}  // namespace kvs::io
