#include "engine/models/var/vae_decoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/models/blocks/conv_blocks.h"

namespace kvs::var {

namespace blocks = conv_blocks;

VaeDecoder::VaeDecoder(const VqvaeConfig& config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                       at::ScalarType dtype)
    : config_(config), dtype_(dtype) {
  config_.validate();
  for (const auto& [name, tensor] : weights)
    if (name.rfind("decoder.", 0) == 0) weights_[name] = tensor.to(device, dtype).contiguous();
}

at::Tensor vae_attn_block(const std::map<std::string, at::Tensor>& weights, const at::Tensor& x, const std::string& p) {
  at::Tensor qkv = blocks::conv(weights, blocks::group_norm(weights, x, p + ".norm"), p + ".qkv", 0);
  const int64_t b = qkv.size(0), c = x.size(1), h = qkv.size(2), w = qkv.size(3);
  auto parts = qkv.reshape({b, 3, c, h, w}).unbind(1);  // q | k | v along channels
  at::Tensor q = parts[0].reshape({b, c, h * w}).permute({0, 2, 1});
  at::Tensor k = parts[1].reshape({b, c, h * w});
  // Upstream order: bmm(q^T, k) * int(C)^-0.5, softmax over keys, bmm(v, w^T).
  at::Tensor scores =
      at::softmax(blocks::bmm(q, k) * std::pow(static_cast<double>(c), -0.5), 2, at::kFloat).to(q.scalar_type());
  at::Tensor out = blocks::bmm(parts[2].reshape({b, c, h * w}), scores.permute({0, 2, 1})).reshape({b, c, h, w});
  return x + blocks::conv(weights, out, p + ".proj_out", 0);
}

at::Tensor VaeDecoder::forward(const at::Tensor& z) const {
  at::Tensor h = blocks::conv(weights_, z.to(dtype_), "decoder.conv_in", 1);
  h = blocks::resnet_block(weights_, h, "decoder.mid.block_1");
  if (config_.using_mid_sa) h = vae_attn_block(weights_, h, "decoder.mid.attn_1");
  h = blocks::resnet_block(weights_, h, "decoder.mid.block_2");
  const int64_t levels = static_cast<int64_t>(config_.ch_mult.size());
  for (int64_t level = levels - 1; level >= 0; --level) {
    const std::string p = "decoder.up." + std::to_string(level);
    for (int64_t i = 0; i <= config_.num_res_blocks; ++i) {
      h = blocks::resnet_block(weights_, h, p + ".block." + std::to_string(i));
      if (level == levels - 1 && config_.using_sa) h = vae_attn_block(weights_, h, p + ".attn." + std::to_string(i));
    }
    if (level != 0) {
      // F.interpolate(scale_factor=2, mode='nearest'), then a 3x3 conv.
      h = at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2}, 2.0, 2.0);
      h = blocks::conv(weights_, h, p + ".upsample.conv", 1);
    }
  }
  h = at::silu(blocks::group_norm(weights_, h, "decoder.norm_out"));
  return blocks::conv(weights_, h, "decoder.conv_out", 1).to(at::kFloat);  // images in float32 whatever the dtype
}

}  // namespace kvs::var
