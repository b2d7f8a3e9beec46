#pragma once
// Randomly initialised Infinity bundles (create-random, bench --random): the
// official sizes (infinity-2b with flan-t5-xl, infinity-8b with its patchified
// VAE), a reduced one that a CPU runs in seconds per image (infinity-small:
// head width 128, as HeatKV's fused kernel needs) and the conformance cases'
// tiny one. Their tokenizer is a small SentencePiece unigram model trained on a
// few captions when the bundle is written: no download is possible here.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/infinity/infinity_model.h"

namespace kvs::infinity {

const std::vector<std::string>& infinity_random_presets();
// InvalidArgumentError naming the presets for an unknown one.
InfinityModelConfig random_infinity_config(const std::string& preset);

void write_random_infinity_bundle(const std::string& dir, const std::string& name, const InfinityModelConfig& config,
                                  uint64_t seed, const std::string& weights_dtype);

}  // namespace kvs::infinity
