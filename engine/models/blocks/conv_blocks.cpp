#include "engine/models/blocks/conv_blocks.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"

namespace kvs::conv_blocks {

const at::Tensor& weight(const Weights& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw ModelMismatchError("VQ weights: missing tensor " + name);
  return it->second;
}

namespace {

bool half_on_cpu(const at::Tensor& t) {
  return t.device().is_cpu() && (t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf);
}

}  // namespace

at::Tensor conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                  int64_t padding) {
  if (!half_on_cpu(x)) return at::conv2d(x, weight, bias, {stride, stride}, {padding, padding});
  return at::conv2d(x.to(at::kFloat), weight.to(at::kFloat), bias.defined() ? bias.to(at::kFloat) : bias,
                    {stride, stride}, {padding, padding})
      .to(x.scalar_type());
}

at::Tensor bmm(const at::Tensor& a, const at::Tensor& b) {
  if (!half_on_cpu(a)) return at::bmm(a, b);
  return at::bmm(a.to(at::kFloat), b.to(at::kFloat)).to(a.scalar_type());
}

at::Tensor conv(const Weights& w, const at::Tensor& x, const std::string& prefix, int64_t padding, int64_t stride) {
  return conv2d(x, weight(w, prefix + ".weight"), weight(w, prefix + ".bias"), stride, padding);
}

at::Tensor group_norm(const Weights& w, const at::Tensor& x, const std::string& prefix) {
  // Statistics in float32 for bf16/f16 decoders (the casts are no-ops in float32):
  // a group's mean and variance run over thousands of activations.
  return at::group_norm(x.to(at::kFloat), 32, weight(w, prefix + ".weight").to(at::kFloat),
                        weight(w, prefix + ".bias").to(at::kFloat), 1e-6)
      .to(x.scalar_type());
}

at::Tensor resnet_block(const Weights& w, const at::Tensor& x, const std::string& p) {
  at::Tensor h = conv(w, at::silu(group_norm(w, x, p + ".norm1")), p + ".conv1", 1);
  h = conv(w, at::silu(group_norm(w, h, p + ".norm2")), p + ".conv2", 1);
  at::Tensor shortcut = w.count(p + ".nin_shortcut.weight") ? conv(w, x, p + ".nin_shortcut", 0) : x;
  return shortcut + h;
}

at::Tensor attn_block(const Weights& w, const at::Tensor& x, const std::string& p) {
  at::Tensor hn = group_norm(w, x, p + ".norm");
  at::Tensor q = conv(w, hn, p + ".q", 0), k = conv(w, hn, p + ".k", 0), v = conv(w, hn, p + ".v", 0);
  const int64_t b = q.size(0), c = q.size(1), hh = q.size(2), ww = q.size(3);
  // Same operation order as upstream: bmm(q^T, k) * int(c)^-0.5, softmax over keys.
  at::Tensor scores = conv_blocks::bmm(q.reshape({b, c, hh * ww}).permute({0, 2, 1}), k.reshape({b, c, hh * ww}));
  scores = at::softmax(scores * std::pow(static_cast<double>(c), -0.5), 2, at::kFloat).to(v.scalar_type());
  at::Tensor out = conv_blocks::bmm(v.reshape({b, c, hh * ww}), scores.permute({0, 2, 1})).reshape({b, c, hh, ww});
  return x + conv(w, out, p + ".proj_out", 0);
}

at::Tensor taming_decoder(const Weights& w, const at::Tensor& z, const TamingDecoderShape& shape,
                          const std::string& prefix) {
  at::Tensor h = conv(w, z, prefix + "conv_in", 1);
  h = resnet_block(w, h, prefix + "mid.block_1");
  h = attn_block(w, h, prefix + "mid.attn_1");
  h = resnet_block(w, h, prefix + "mid.block_2");
  const int64_t levels = static_cast<int64_t>(shape.ch_mult.size());
  int64_t curr_res = shape.resolution >> (levels - 1);
  for (int64_t level = levels - 1; level >= 0; --level) {
    const std::string p = prefix + "up." + std::to_string(level);
    const bool attn = std::find(shape.attn_resolutions.begin(), shape.attn_resolutions.end(), curr_res) !=
                      shape.attn_resolutions.end();
    for (int64_t i = 0; i <= shape.num_res_blocks; ++i) {
      h = resnet_block(w, h, p + ".block." + std::to_string(i));
      if (attn) h = attn_block(w, h, p + ".attn." + std::to_string(i));
    }
    if (level != 0) {
      // F.interpolate(scale_factor=2.0, mode="nearest"), then a 3x3 conv.
      h = at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2}, 2.0, 2.0);
      h = conv(w, h, p + ".upsample.conv", 1);
      curr_res *= 2;
    }
  }
  h = at::silu(group_norm(w, h, prefix + "norm_out"));
  return conv(w, h, prefix + "conv_out", 1);
}

}  // namespace kvs::conv_blocks
