#pragma once
// Lumina-mGPT's state-dict names and shapes, derived from a config: what the
// bundle loader, the converter and the conformance runner check, the same strict
// way. The language model keeps the official Hugging Face names (model.*,
// lm_head.weight); the VQGAN's decoding side sits under "vqgan." with the names
// of Chameleon's vqgan.ckpt state_dict.
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/lumina/lumina_config.h"

namespace kvs::lumina {

// model.embed_tokens, model.layers.*, model.norm, lm_head (no biases; qk-norm
// weight and bias [model_parallel_size, head_dim]).
std::vector<io::ExpectedTensor> chameleon_expected_tensors(const ChameleonConfig& config);
// quantize.embedding.weight, post_quant_conv.*, decoder.* (no prefix).
std::vector<io::ExpectedTensor> vqgan_decoder_expected_tensors(const VqganConfig& config);
// Both, the VQGAN's under "vqgan.".
std::vector<io::ExpectedTensor> lumina_expected_tensors(const LuminaConfig& config);

// Official keys generation never uses: the HF model's VQ encoder
// (model.vqmodel.*) and the VQGAN's encoder side and losses. The converter
// accepts and drops them.
bool is_unused_chameleon_key(const std::string& name);
bool is_unused_vqgan_key(const std::string& name);

}  // namespace kvs::lumina
