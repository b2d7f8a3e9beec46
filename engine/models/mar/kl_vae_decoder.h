#pragma once
// The decoding half of MAR's KL-16 VAE (LTH14/mar models/vae.py
// AutoencoderKL.decode: post_quant_conv, then Decoder: conv_in, a middle of two
// ResnetBlocks around a self-attention block, `up` levels from the lowest
// resolution upwards — num_res_blocks + 1 ResnetBlocks each, attention only at
// attn_resolutions (none for kl16), nearest-2x upsampling + conv above level 0 —
// GroupNorm, swish, conv_out). ResnetBlock, AttnBlock (separate q/k/v convs) and
// GroupNorm(32, eps 1e-6) are the same blocks as LlamaGen's VQ decoder
// (engine/models/blocks/conv_blocks.h), shared rather than copied.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

class KlVaeDecoder {
 public:
  // `weights`: AutoencoderKL state_dict names without prefix (post_quant_conv.*,
  // decoder.*), shape-checked. `dtype`: what the weights and activations are kept
  // in; GroupNorm statistics and the attention softmax run in float32.
  KlVaeDecoder(const KlVaeConfig& config, const std::map<std::string, at::Tensor>& weights, at::Device device,
               at::ScalarType dtype = at::kFloat);

  const KlVaeConfig& config() const { return config_; }

  // AutoencoderKL.decode(z): z [B, embed_dim, h, w] -> [B, out_ch, h*f, w*f] in
  // float32, unclamped.
  at::Tensor decode(const at::Tensor& z) const;
  // What MAR's sample code decodes: vae.decode(tokens / latent_scale).
  at::Tensor decode_tokens(const at::Tensor& tokens_bchw) const;

 private:
  KlVaeConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  std::map<std::string, at::Tensor> weights_;
};

// engine_mar.py's image conversion: round(clip((x + 1) / 2 * 255, 0, 255)),
// [B, 3, H, W] float -> uint8 [B, H, W, 3] on the CPU.
at::Tensor mar_images_to_uint8_nhwc(const at::Tensor& images);

}  // namespace kvs::mar
