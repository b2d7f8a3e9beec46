#pragma once
// The official VQModel state_dict key names and shapes (LlamaGen's
// tokenizer/tokenizer_image/vq_model.py), derived from a config: the loaders,
// the converters and the training tool check VQ weights the same strict way.
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/blocks/vq_config.h"

namespace kvs::vq {

// The parts of VQModel.state_dict() that decode_code uses (no prefix):
// quantize.embedding, post_quant_conv, decoder.*.
std::vector<io::ExpectedTensor> vq_decoder_expected_tensors(const VqConfig& config);
// The encoder side of VQModel.state_dict() (no prefix): encoder.* (Encoder with
// ch = config.ch and `encoder_ch_mult`) and quant_conv.*. Only the training tool
// needs them; bundles drop them like the converter does.
std::vector<io::ExpectedTensor> vq_encoder_expected_tensors(const VqConfig& config,
                                                            const std::vector<int64_t>& encoder_ch_mult);
// Whether `name` (a VQModel state-dict key, no prefix) is of the encoder half:
// encoder.* or quant_conv.*.
bool is_vq_encoder_key(const std::string& name);
// Official VQModel keys that decoding never uses (encoder.*, quant_conv.*,
// quantize.codebook_used): accepted and dropped by the converter.
bool is_unused_vq_key(const std::string& name);

}  // namespace kvs::vq
