#include "engine/models/blocks/vq_decoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/conv_blocks.h"

namespace kvs::vq {

VqDecoder::VqDecoder(VqConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                     at::ScalarType dtype)
    : config_(std::move(config)), dtype_(dtype) {
  config_.validate();
  for (const auto& [name, t] : weights) weights_[name] = t.to(device, dtype).contiguous();
  // The codebook is normalised from the stored values in float32, then kept in the dtype.
  at::Tensor embedding = conv_blocks::weight(weights, "quantize.embedding.weight").to(device, at::kFloat);
  if (config_.codebook_l2_norm) {
    // F.normalize(p=2, dim=-1, eps=1e-12): x / max(||x||, eps)
    embedding = embedding / at::clamp_min(at::norm(embedding, 2, {-1}, /*keepdim=*/true), 1e-12);
  }
  codebook_ = embedding.to(dtype);
}

const at::Tensor& VqDecoder::w(const std::string& name) const { return conv_blocks::weight(weights_, name); }

at::Tensor VqDecoder::conv(const at::Tensor& x, const std::string& prefix, int64_t padding) const {
  return conv_blocks::conv(weights_, x, prefix, padding);
}

at::Tensor VqDecoder::group_norm(const at::Tensor& x, const std::string& prefix) const {
  return conv_blocks::group_norm(weights_, x, prefix);
}

at::Tensor VqDecoder::resnet_block(const at::Tensor& x, const std::string& p) const {
  return conv_blocks::resnet_block(weights_, x, p);
}

at::Tensor VqDecoder::attn_block(const at::Tensor& x, const std::string& p) const {
  return conv_blocks::attn_block(weights_, x, p);
}

at::Tensor VqDecoder::decode_codes(const at::Tensor& codes, int64_t grid_h, int64_t grid_w) const {
  const int64_t b = codes.size(0);
  if (codes.numel() != b * grid_h * grid_w)
    throw InvalidArgumentError("VQ decode: " + std::to_string(codes.numel()) + " codes do not fill a " +
                               std::to_string(b) + "x" + std::to_string(grid_h) + "x" + std::to_string(grid_w) +
                               " grid");
  at::Tensor idx = codes.to(codebook_.device(), at::kLong).reshape({-1});
  if (idx.numel() > 0) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    if (lo < 0 || hi >= config_.codebook_size)
      throw InvalidArgumentError("VQ decode: code " + std::to_string(lo < 0 ? lo : hi) +
                                 " is outside the codebook [0, " + std::to_string(config_.codebook_size) + ")");
  }
  at::Tensor z = codebook_.index_select(0, idx)
                     .reshape({b, grid_h, grid_w, config_.codebook_embed_dim})
                     .permute({0, 3, 1, 2})
                     .contiguous();
  return decode_latent(z);
}

at::Tensor VqDecoder::decode_latent(const at::Tensor& z) const {
  at::Tensor h = conv(z.to(dtype_), "post_quant_conv", 0);
  h = conv(h, "decoder.conv_in", 1);
  h = resnet_block(h, "decoder.mid.0");
  h = attn_block(h, "decoder.mid.1");
  h = resnet_block(h, "decoder.mid.2");
  const int64_t levels = static_cast<int64_t>(config_.decoder_ch_mult.size());
  for (int64_t j = 0; j < levels; ++j) {
    const std::string p = "decoder.conv_blocks." + std::to_string(j);
    for (int64_t i = 0; i <= config_.num_res_blocks; ++i) {
      h = resnet_block(h, p + ".res." + std::to_string(i));
      if (j == 0) h = attn_block(h, p + ".attn." + std::to_string(i));
    }
    if (j != levels - 1) {
      h = at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2});
      h = conv(h, p + ".upsample.conv", 1);
    }
  }
  h = at::silu(group_norm(h, "decoder.norm_out"));
  return conv(h, "decoder.conv_out", 1).to(at::kFloat);  // images in float32 whatever the dtype
}

}  // namespace kvs::vq
