#include "engine/models/lumina/chameleon_vqgan.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/conv_blocks.h"

namespace kvs::lumina {

ChameleonVqgan::ChameleonVqgan(VqganConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                               at::ScalarType dtype)
    : config_(std::move(config)), device_(device), dtype_(dtype) {
  for (const auto& [name, tensor] : weights)
    if (name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0 || name == "quantize.embedding.weight")
      weights_[name] = tensor.to(device, dtype).contiguous();
  conv_blocks::weight(weights_, "quantize.embedding.weight");
}

at::Tensor ChameleonVqgan::decode_codes(const at::Tensor& codes) const {
  if (codes.dim() != 3) throw InvalidArgumentError("VQGAN decode: codes must be [B, H, W]");
  const at::Tensor ids = codes.to(device_, at::kLong);
  if (ids.numel() > 0 && (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= config_.n_embed))
    throw InvalidArgumentError("VQGAN decode: a code is outside [0, " + std::to_string(config_.n_embed) + ")");
  // get_codebook_entry: embedding(codes).view(B, H, W, C).permute(0, 3, 1, 2).
  at::Tensor z =
      at::embedding(conv_blocks::weight(weights_, "quantize.embedding.weight"), ids).permute({0, 3, 1, 2}).contiguous();
  at::Tensor h = conv_blocks::conv(weights_, z, "post_quant_conv", 0);
  const conv_blocks::TamingDecoderShape shape{config_.ch_mult, config_.num_res_blocks, config_.attn_resolutions,
                                              config_.resolution};
  return conv_blocks::taming_decoder(weights_, h, shape).to(at::kFloat);
}

at::Tensor lumina_images_to_uint8_nhwc(const at::Tensor& images) {
  at::Tensor x = (at::clamp(images.to(at::kCPU, at::kFloat), -1, 1) + 1) / 2;
  return (x * 255).to(at::kByte).permute({0, 2, 3, 1}).contiguous();
}

}  // namespace kvs::lumina
