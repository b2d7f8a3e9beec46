#pragma once
// The official MAR / KL-VAE state_dict key names and shapes, derived from a
// config. The bundle loader, the converter and the conformance runner check
// weights the same strict way through these lists.
//
// MAR.state_dict() holds only parameters (no buffers); the diffusion head's keys
// are "diffloss.net.*". Of AutoencoderKL.state_dict() inference uses
// post_quant_conv.* and decoder.*; encoder.* and quant_conv.* (and a training
// checkpoint's loss.* discriminator / LPIPS parts) are accepted and dropped.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

// models/mar.py MAR.state_dict() (no prefix), diffusion head included.
std::vector<io::ExpectedTensor> mar_expected_tensors(const MarConfig& config);
// The decoding half of models/vae.py AutoencoderKL.state_dict() (no prefix).
std::vector<io::ExpectedTensor> kl_vae_expected_tensors(const KlVaeConfig& config);
// encoder.*, quant_conv.*, loss.*: never used to decode.
bool is_unused_vae_key(const std::string& name);

// Element counts of the lists above.
int64_t mar_parameter_count(const MarConfig& config);
int64_t kl_vae_decoder_parameter_count(const KlVaeConfig& config);

// The decoder architecture of an AutoencoderKL state dict (names without
// prefix), read from tensor shapes: embed_dim, ch, ch_mult (level 0 has ch_mult
// 1, as in every official config), num_res_blocks, attention levels, out_ch.
// Throws ModelMismatchError naming `origin` when decoder tensors are missing.
KlVaeConfig infer_kl_vae_config(const io::ShapeMap& shapes, const std::string& origin);

// Prefixes every expected name (e.g. "mar." / "vae." in bundles and conformance files).
std::vector<io::ExpectedTensor> with_prefix(const std::string& prefix, const std::vector<io::ExpectedTensor>& expected);

}  // namespace kvs::mar
