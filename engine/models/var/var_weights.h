#pragma once
// The official VAR / VQVAE state_dict key names and shapes, derived from a config.
// The bundle loader, the converter and the conformance runner check weights the
// same strict way through these lists.
//
// Three kinds of official keys:
//   - expected: the parameters inference uses (a bundle holds exactly these);
//   - buffers that are recomputed here and may be present (checked for shape,
//     then ignored): VAR's lvl_1L, attn_bias_for_masking, blocks.N.attn.zero_k_bias
//     and the VQVAE's quantize.ema_vocab_hit_SV;
//   - VQVAE parts that inference never runs (encoder.*, quant_conv.*): accepted
//     and dropped by the converter.
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/var/var_config.h"

namespace kvs::var {

// models/var.py VAR.state_dict() parameters (no prefix).
std::vector<io::ExpectedTensor> var_expected_tensors(const VarConfig& config);
// VAR buffers (no prefix): recomputed from the config, optional in a file.
std::vector<io::ExpectedTensor> var_buffer_tensors(const VarConfig& config);

// The VQVAE parts that VAR inference uses (no prefix): quantize.embedding,
// quantize.quant_resi.* (the phi convolutions), post_quant_conv, decoder.*.
std::vector<io::ExpectedTensor> vqvae_expected_tensors(const VqvaeConfig& config);
std::vector<io::ExpectedTensor> vqvae_buffer_tensors(const VqvaeConfig& config);
// The VQVAE's encoder half (basic_vae.py Encoder with the decoder's ddconfig, as
// VQVAE builds both from one dict, then quant_conv): encoder.* and quant_conv.*.
// Only the training tool uses them (kvstudio-train var-vae).
std::vector<io::ExpectedTensor> vqvae_encoder_expected_tensors(const VqvaeConfig& config);
// encoder.* and quant_conv.*: never used by VAR inference.
bool is_unused_vqvae_key(const std::string& name);

// The state-dict key of phi number `index` ("quantize.quant_resi.qresi_ls.<i>",
// ".qresi" or ".<i>" depending on share_quant_resi), without ".weight"/".bias".
std::string phi_key(const VqvaeConfig& config, int64_t index);

// What a file holding these tensors under `prefix` must contain: the expected
// tensors, plus those optional buffers the file has (so their shapes are checked
// too). Feed the result to io::check_tensor_set, which names every missing,
// unexpected and mis-shaped tensor.
std::vector<io::ExpectedTensor> prefixed_with_present_buffers(const io::ShapeMap& have, const std::string& prefix,
                                                              const std::vector<io::ExpectedTensor>& expected,
                                                              const std::vector<io::ExpectedTensor>& buffers);

}  // namespace kvs::var
