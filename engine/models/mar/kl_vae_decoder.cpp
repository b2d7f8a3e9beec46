#include "engine/models/mar/kl_vae_decoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

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
  h = blocks::conv(weights_, h, "decoder.conv_in", 1);
  h = blocks::resnet_block(weights_, h, "decoder.mid.block_1");
  h = blocks::attn_block(weights_, h, "decoder.mid.attn_1");
  h = blocks::resnet_block(weights_, h, "decoder.mid.block_2");
  const int64_t levels = static_cast<int64_t>(config_.ch_mult.size());
  int64_t curr_res = config_.resolution >> (levels - 1);
  for (int64_t level = levels - 1; level >= 0; --level) {
    const std::string p = "decoder.up." + std::to_string(level);
    const bool attn = std::find(config_.attn_resolutions.begin(), config_.attn_resolutions.end(), curr_res) !=
                      config_.attn_resolutions.end();
    for (int64_t i = 0; i <= config_.num_res_blocks; ++i) {
      h = blocks::resnet_block(weights_, h, p + ".block." + std::to_string(i));
      if (attn) h = blocks::attn_block(weights_, h, p + ".attn." + std::to_string(i));
    }
    if (level != 0) {
      // F.interpolate(scale_factor=2.0, mode="nearest"), then a 3x3 conv.
      h = at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2}, 2.0, 2.0);
      h = blocks::conv(weights_, h, p + ".upsample.conv", 1);
      curr_res *= 2;
    }
  }
  h = at::silu(blocks::group_norm(weights_, h, "decoder.norm_out"));
  return blocks::conv(weights_, h, "decoder.conv_out", 1).to(at::kFloat);  // images in float32 whatever the dtype
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
