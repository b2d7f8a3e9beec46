#pragma once
// The VQVAE image decoder of VAR (models/basic_vae.py Decoder): conv_in, a middle
// of two ResnetBlocks around a self-attention block, `up` levels from the lowest
// resolution upwards (num_res_blocks + 1 ResnetBlocks each, self-attention after
// each block of the lowest level, nearest-2x upsampling + conv above level 0),
// GroupNorm, SiLU, conv_out. ResnetBlock and GroupNorm are the same blocks as
// LlamaGen's tokenizer (engine/models/blocks/conv_blocks.h); only the attention
// block differs (one fused qkv convolution).
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "engine/models/var/var_config.h"

namespace kvs::var {

// basic_vae.py AttnBlock over "<prefix>.norm/.qkv/.proj_out" (one fused qkv
// convolution), shared by the decoder and the training tool's encoder.
at::Tensor vae_attn_block(const std::map<std::string, at::Tensor>& weights, const at::Tensor& x,
                          const std::string& prefix);

class VaeDecoder {
 public:
  // `weights`: VQVAE state_dict names without prefix ("decoder.*"), shape-checked.
  // `dtype`: what the weights and activations are kept in; GroupNorm statistics
  // and the attention softmax run in float32.
  VaeDecoder(const VqvaeConfig& config, const std::map<std::string, at::Tensor>& weights, at::Device device,
             at::ScalarType dtype = at::kFloat);

  // z [B, z_channels, h, w] (after post_quant_conv) -> [B, in_channels, h*f, w*f]
  // in float32, unclamped.
  at::Tensor forward(const at::Tensor& z) const;

 private:
  VqvaeConfig config_;
  at::ScalarType dtype_;
  std::map<std::string, at::Tensor> weights_;
};

}  // namespace kvs::var
