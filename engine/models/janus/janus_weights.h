#pragma once
// The official MultiModalityCausalLM state_dict names and shapes of the
// generation path, derived from a config: what the bundle loader, the converter
// and the conformance runner check, the same strict way.
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/janus/janus_config.h"

namespace kvs::janus {

// language_model.model.* (no text head), gen_embed.*, gen_aligner.*, gen_head.*
// and the decoding side of gen_vision_model.*.
std::vector<io::ExpectedTensor> janus_expected_tensors(const JanusConfig& config);

// The same without the decoder (gen_vision_model.*): what JanusModel::from_tensors
// takes and what the text-to-image trainer trains.
std::vector<io::ExpectedTensor> janus_generation_tensors(const JanusConfig& config);

// Official keys that image generation never uses: the understanding path
// (vision_model.*, aligner.*), the text head (language_model.lm_head.*), the VQ
// encoder side. The converter accepts and drops them.
bool is_unused_janus_key(const std::string& name);

}  // namespace kvs::janus
