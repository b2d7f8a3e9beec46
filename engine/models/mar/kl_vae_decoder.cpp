#include "engine/models/mar/kl_vae_decoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/conv_blocks.h"

namespace kvs::mar {

namespace blocks = conv_blocks;

KlVaeDecoder::KlVaeDecoder(const KlVaeConfig& config, const std::map<std::string, at::Tensor>& weights,
                           at::Device device, at::ScalarType dtype)
    : config_(config), device_(device), dtype_(dtype) {
  config_.validate();
  for (const auto& [name, tensor] : weights)
    if (name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0)
      weights_[name] = tensor.to(device, dtype).contiguous();
}

at::Tensor KlVaeDecoder::decode(const at::Tensor& z) const {
  if (z.dim() != 4 || z.size(1) != config_.embed_dim)
    throw InvalidArgumentError("KL-VAE decode: latent has shape " + c10::str(z.sizes()) + ", expected [B, " +
                               std::to_string(config_.embed_dim) + ", h, w]");
  at::Tensor h = blocks::conv(weights_, z.to(device_, dtype_), "post_quant_conv", 0);
  const blocks::TamingDecoderShape shape{config_.ch_mult, config_.num_res_blocks, config_.attn_resolutions,
                                         config_.resolution};
  return blocks::taming_decoder(weights_, h, shape).to(at::kFloat);  // images in float32 whatever the dtype
}

at::Tensor KlVaeDecoder::decode_tokens(const at::Tensor& tokens_bchw) const {
  // The scaling runs on the float32 tokens; decode casts to the dtype.
  return decode(tokens_bchw.to(device_, at::kFloat) / config_.latent_scale);
}

at::Tensor mar_images_to_uint8_nhwc(const at::Tensor& images) {
  at::Tensor x = ((images.to(at::kCPU, at::kFloat) + 1) / 2 * 255).clamp(0, 255).round();
  return x.to(at::kByte).permute({0, 2, 3, 1}).contiguous();
}

}  // namespace kvs::mar
