#pragma once
// create-random for Lumina-mGPT: untrained bundles of the official sizes (speed
// and memory without a download) and a tiny one for tests, with a byte-level
// tokenizer in Chameleon's vocabulary layout (lumina_tokenizer_files.h). An
// untrained model does not write the image header on its own; its runs use the
// run's header (lumina_generation.h says how).
#include <cstdint>
#include <string>

#include "engine/models/lumina/lumina_config.h"

namespace kvs::lumina {

// A few-MB model that exercises every path (grouped-query attention included):
// hidden 128, 2 layers, 4 heads over 2 KV heads, the tokenizer's 9088 ids, a
// 3-level VQGAN (x4), 256 px prompts (16x16 tokens, 64x64 pixels out).
LuminaConfig tiny_lumina_config();
// Lumina-mGPT-7B's vocabulary, VQGAN and 768 px with a language model of hidden
// 1024 x 8 layers (16 heads): the speed comparison's model on a CPU, where 7B
// takes seconds per token.
LuminaConfig small_lumina_config();
// "lumina-mgpt-tiny", "lumina-mgpt-small", or an official size (lumina_preset).
LuminaConfig random_lumina_config(const std::string& preset);

void write_random_lumina_bundle(const std::string& dir, const std::string& name, const LuminaConfig& config,
                                uint64_t seed, const std::string& weights_dtype);

}  // namespace kvs::lumina
