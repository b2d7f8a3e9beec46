#pragma once
// Builders of expected-tensor lists for the layers the official checkpoints
// share (torch.nn names: <p>.weight / <p>.bias), used by every family's
// *_expected_tensors and the training-only encoders.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"

namespace kvs::io {

// nn.Linear(in, out_features) with bias.
void add_linear(std::vector<ExpectedTensor>& out, const std::string& p, int64_t in, int64_t out_features);
// nn.Conv2d(in, out_ch, k) with bias.
void add_conv(std::vector<ExpectedTensor>& out, const std::string& p, int64_t in, int64_t out_ch, int64_t k);
// LayerNorm / GroupNorm with affine weight and bias.
void add_norm(std::vector<ExpectedTensor>& out, const std::string& p, int64_t ch);
// The taming/LDM ResnetBlock without time embedding (LlamaGen VQ, VAR and MAR
// VAEs): norm1, conv1, norm2, conv2, and nin_shortcut when the channels change.
void add_resnet(std::vector<ExpectedTensor>& out, const std::string& p, int64_t in, int64_t out_ch);
// The taming/LDM AttnBlock with separate 1x1 q, k, v convolutions and proj_out
// (LlamaGen VQ, MAR's KL VAE; VAR fuses qkv and lists its own).
void add_attn_separate_qkv(std::vector<ExpectedTensor>& out, const std::string& p, int64_t ch);

// The taming/LDM Decoder (MAR's KL-16, Chameleon's VQGAN; the network is
// conv_blocks::taming_decoder): conv_in from z_channels, the middle blocks, the
// up levels from ch_mult (up.{l} is level l; AttnBlocks where the level's
// resolution is in attn_resolutions), norm_out and conv_out to out_ch, under
// "<prefix>".
void add_taming_decoder(std::vector<ExpectedTensor>& out, const std::string& prefix, int64_t z_channels, int64_t ch,
                        const std::vector<int64_t>& ch_mult, int64_t num_res_blocks,
                        const std::vector<int64_t>& attn_resolutions, int64_t resolution, int64_t out_ch);

}  // namespace kvs::io
