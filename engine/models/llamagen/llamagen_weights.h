#pragma once
// The official LlamaGen state_dict key names and shapes, derived from a config.
// Used by the bundle loader, the converter and the conformance runner so that all
// three check weights the same strict way.
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::llamagen {

// gpt.py Transformer.state_dict() (no prefix).
std::vector<io::ExpectedTensor> gpt_expected_tensors(const GptConfig& config);
// The parts of VQModel.state_dict() that decode_code uses (no prefix):
// quantize.embedding, post_quant_conv, decoder.*.
std::vector<io::ExpectedTensor> vq_decoder_expected_tensors(const VqConfig& config);
// The encoder side of VQModel.state_dict() (no prefix): encoder.* (Encoder with
// ch = config.ch and `encoder_ch_mult`) and quant_conv.*. Only the training tool
// needs them; bundles drop them like the converter does.
std::vector<io::ExpectedTensor> vq_encoder_expected_tensors(const VqConfig& config,
                                                            const std::vector<int64_t>& encoder_ch_mult);
// Official VQModel keys that decoding never uses (encoder.*, quant_conv.*,
// quantize.codebook_used): accepted and dropped by the converter.
bool is_unused_vq_key(const std::string& name);

}  // namespace kvs::llamagen
