#include "engine/models/llamagen/vq_decoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace kvs::llamagen {

VqDecoder::VqDecoder(VqConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device)
    : config_(std::move(config)) {
  config_.validate();
  for (const auto& [name, t] : weights) weights_[name] = t.to(device, at::kFloat).contiguous();
  at::Tensor embedding = w("quantize.embedding.weight");
  if (config_.codebook_l2_norm) {
    // F.normalize(p=2, dim=-1, eps=1e-12): x / max(||x||, eps)
    embedding = embedding / at::clamp_min(at::norm(embedding, 2, {-1}, /*keepdim=*/true), 1e-12);
  }
  codebook_ = embedding;
}

const at::Tensor& VqDecoder::w(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) throw ModelMismatchError("VQ decoder weights: missing tensor " + name);
  return it->second;
}

at::Tensor VqDecoder::conv(const at::Tensor& x, const std::string& prefix, int64_t padding) const {
  return at::conv2d(x, w(prefix + ".weight"), w(prefix + ".bias"), {1, 1}, {padding, padding});
}

at::Tensor VqDecoder::group_norm(const at::Tensor& x, const std::string& prefix) const {
  return at::group_norm(x, 32, w(prefix + ".weight"), w(prefix + ".bias"), 1e-6);
}

at::Tensor VqDecoder::resnet_block(const at::Tensor& x, const std::string& p) const {
  at::Tensor h = conv(at::silu(group_norm(x, p + ".norm1")), p + ".conv1", 1);
  h = conv(at::silu(group_norm(h, p + ".norm2")), p + ".conv2", 1);
  at::Tensor shortcut = weights_.count(p + ".nin_shortcut.weight") ? conv(x, p + ".nin_shortcut", 0) : x;
  return shortcut + h;
}

at::Tensor VqDecoder::attn_block(const at::Tensor& x, const std::string& p) const {
  at::Tensor hn = group_norm(x, p + ".norm");
  at::Tensor q = conv(hn, p + ".q", 0), k = conv(hn, p + ".k", 0), v = conv(hn, p + ".v", 0);
  const int64_t b = q.size(0), c = q.size(1), hh = q.size(2), ww = q.size(3);
  // Same operation order as upstream: bmm(q^T, k) * int(c)^-0.5, softmax over keys.
  at::Tensor weights = at::bmm(q.reshape({b, c, hh * ww}).permute({0, 2, 1}), k.reshape({b, c, hh * ww}));
  weights = at::softmax(weights * std::pow(static_cast<double>(c), -0.5), 2);
  at::Tensor out = at::bmm(v.reshape({b, c, hh * ww}), weights.permute({0, 2, 1})).reshape({b, c, hh, ww});
  return x + conv(out, p + ".proj_out", 0);
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
      throw InvalidArgumentError("VQ decode: code " + std::to_string(lo < 0 ? lo : hi) + " is outside the codebook [0, " +
                                 std::to_string(config_.codebook_size) + ")");
  }
  at::Tensor z = codebook_.index_select(0, idx)
                     .reshape({b, grid_h, grid_w, config_.codebook_embed_dim})
                     .permute({0, 3, 1, 2})
                     .contiguous();
  at::Tensor h = conv(z, "post_quant_conv", 0);
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
  return conv(h, "decoder.conv_out", 1);
}

at::Tensor images_to_uint8_nhwc(const at::Tensor& images) {
  return images.detach().to(at::kFloat).mul(127.5).add(128.0).clamp(0, 255).permute({0, 2, 3, 1}).to(at::kCPU, at::kByte).contiguous();
}

}  // namespace kvs::llamagen
