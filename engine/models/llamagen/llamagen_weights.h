#pragma once
// The official LlamaGen state_dict key names and shapes, derived from a config.
// Used by the bundle loader, the converter and the conformance runner so that all
// three check weights the same strict way.
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/blocks/vq_weights.h"
#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::llamagen {

// gpt.py Transformer.state_dict() (no prefix).
std::vector<io::ExpectedTensor> gpt_expected_tensors(const GptConfig& config);

// The VQ tokenizer's (engine/models/blocks/vq_weights.h).
using vq::is_unused_vq_key;
using vq::vq_decoder_expected_tensors;
using vq::vq_encoder_expected_tensors;

}  // namespace kvs::llamagen
