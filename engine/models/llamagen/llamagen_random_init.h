#pragma once
// Randomly initialised LlamaGen bundles: the bundled default model until trained
// demo weights ship, speed/memory experiments at official sizes without a
// download, and models built inside tests. Seeded and deterministic.
//
// Init (chosen so outputs are not degenerate, unlike the official zero-init of
// `output`): embeddings N(0,1); Linear/Conv weights N(0, 1/fan_in); norm weights 1;
// biases 0; codebook N(0,1) (L2-normalised at use).
#include <cstdint>
#include <string>

#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::llamagen {

// Writes DIR/model.json + DIR/weights.safetensors; `weights_dtype`: f32 | f16 | bf16.
void write_random_llamagen_bundle(const std::string& dir, const std::string& name, const GptConfig& gpt,
                                  const VqConfig& vq, uint64_t seed, const std::string& weights_dtype = "f32");

// The configuration of the bundled demo model (16x16 tokens, 64x64 px, 10 classes).
GptConfig demo_gpt_config();
VqConfig demo_vq_config();

}  // namespace kvs::llamagen
