#include "engine/models/mar/diffusion_head.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"

namespace kvs::mar {
namespace {

constexpr int64_t kFrequencyEmbeddingSize = 256;
constexpr double kLayerNormEps = 1e-6;

at::Tensor take_as(const std::map<std::string, at::Tensor>& w, const std::string& name, at::Device device,
                   at::ScalarType dtype) {
  auto it = w.find(name);
  if (it == w.end()) throw ModelMismatchError("MAR diffusion head weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

// LayerNorm with float32 statistics (the casts are no-ops in float32).
at::Tensor layer_norm_f32(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps) {
  return at::layer_norm(x.to(at::kFloat), {x.size(-1)}, w.defined() ? w.to(at::kFloat) : w,
                        b.defined() ? b.to(at::kFloat) : b, eps)
      .to(x.scalar_type());
}

// modulate(x, shift, scale) = x * (1 + scale) + shift
at::Tensor modulate(const at::Tensor& x, const at::Tensor& shift, const at::Tensor& scale) {
  return x * (1 + scale) + shift;
}

}  // namespace

DiffusionHead::DiffusionHead(const MarConfig& config, const std::map<std::string, at::Tensor>& w, at::Device device,
                             at::ScalarType dtype)
    : in_channels_(config.token_embed_dim()), width_(config.diffloss_w), device_(device), dtype_(dtype) {
  auto take = [&](const std::map<std::string, at::Tensor>& weights, const std::string& name, at::Device d) {
    return take_as(weights, name, d, dtype);
  };
  time0_w_ = take(w, "time_embed.mlp.0.weight", device);
  time0_b_ = take(w, "time_embed.mlp.0.bias", device);
  time2_w_ = take(w, "time_embed.mlp.2.weight", device);
  time2_b_ = take(w, "time_embed.mlp.2.bias", device);
  cond_w_ = take(w, "cond_embed.weight", device);
  cond_b_ = take(w, "cond_embed.bias", device);
  input_w_ = take(w, "input_proj.weight", device);
  input_b_ = take(w, "input_proj.bias", device);
  for (int64_t i = 0; i < config.diffloss_d; ++i) {
    const std::string p = "res_blocks." + std::to_string(i) + ".";
    ResBlock b;
    b.ln_w = take(w, p + "in_ln.weight", device);
    b.ln_b = take(w, p + "in_ln.bias", device);
    b.mlp0_w = take(w, p + "mlp.0.weight", device);
    b.mlp0_b = take(w, p + "mlp.0.bias", device);
    b.mlp2_w = take(w, p + "mlp.2.weight", device);
    b.mlp2_b = take(w, p + "mlp.2.bias", device);
    b.ada_w = take(w, p + "adaLN_modulation.1.weight", device);
    b.ada_b = take(w, p + "adaLN_modulation.1.bias", device);
    blocks_.push_back(std::move(b));
  }
  final_ada_w_ = take(w, "final_layer.adaLN_modulation.1.weight", device);
  final_ada_b_ = take(w, "final_layer.adaLN_modulation.1.bias", device);
  final_w_ = take(w, "final_layer.linear.weight", device);
  final_b_ = take(w, "final_layer.linear.bias", device);
}

at::Tensor DiffusionHead::timestep_embedding(const at::Tensor& t, int64_t dim, double max_period) {
  const int64_t half = dim / 2;
  // Same float32 operation order as upstream: (-ln(max_period) * arange) / half, then exp.
  at::Tensor freqs = at::exp(at::arange(0, half, at::TensorOptions().dtype(at::kFloat)) * (-std::log(max_period)) /
                             static_cast<double>(half))
                         .to(t.device());
  at::Tensor args = t.unsqueeze(1).to(at::kFloat) * freqs.unsqueeze(0);
  at::Tensor embedding = at::cat({at::cos(args), at::sin(args)}, -1);
  if (dim % 2) embedding = at::cat({embedding, at::zeros_like(embedding.narrow(1, 0, 1))}, -1);
  return embedding;
}

at::Tensor DiffusionHead::condition(const at::Tensor& t, const at::Tensor& c) const {
  at::Tensor t_freq = timestep_embedding(t.to(device_), kFrequencyEmbeddingSize).to(dtype_);
  at::Tensor t_emb = at::linear(at::silu(at::linear(t_freq, time0_w_, time0_b_)), time2_w_, time2_b_);
  return t_emb + at::linear(c.to(device_, dtype_), cond_w_, cond_b_);
}

at::Tensor DiffusionHead::input(const at::Tensor& x) const {
  return at::linear(x.to(device_, dtype_), input_w_, input_b_);
}

DiffusionHead::Modulation DiffusionHead::modulation(int64_t i, const at::Tensor& y) const {
  const ResBlock& b = blocks_.at(static_cast<size_t>(i));
  auto mod = at::linear(at::silu(y), b.ada_w, b.ada_b).chunk(3, -1);  // shift, scale, gate
  return {mod[0], mod[1], mod[2]};
}

at::Tensor DiffusionHead::mlp_branch(int64_t i, const at::Tensor& x, const Modulation& m) const {
  const ResBlock& b = blocks_.at(static_cast<size_t>(i));
  at::Tensor h = modulate(layer_norm_f32(x, b.ln_w, b.ln_b, kLayerNormEps), m.shift, m.scale);
  return at::linear(at::silu(at::linear(h, b.mlp0_w, b.mlp0_b)), b.mlp2_w, b.mlp2_b);
}

at::Tensor DiffusionHead::res_block(int64_t i, const at::Tensor& x, const at::Tensor& y) const {
  const Modulation m = modulation(i, y);
  return x + m.gate * mlp_branch(i, x, m);
}

at::Tensor DiffusionHead::final_layer(const at::Tensor& x, const at::Tensor& y) const {
  auto mod = at::linear(at::silu(y), final_ada_w_, final_ada_b_).chunk(2, -1);  // shift, scale
  at::Tensor h = modulate(layer_norm_f32(x, {}, {}, kLayerNormEps), mod[0], mod[1]);
  return at::linear(h, final_w_, final_b_).to(at::kFloat);  // the sampler's arithmetic is float32
}

at::Tensor DiffusionHead::forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& c) const {
  at::Tensor h = input(x);
  const at::Tensor y = condition(t, c);
  for (int64_t i = 0; i < depth(); ++i) h = res_block(i, h, y);
  return final_layer(h, y);
}

at::Tensor DiffusionHead::forward_with_cfg(const at::Tensor& x, const at::Tensor& t, const at::Tensor& c,
                                           double cfg_scale) const {
  const int64_t n = x.size(0) / 2;
  at::Tensor half = x.narrow(0, 0, n);
  at::Tensor out = forward(at::cat({half, half}, 0), t, c);
  at::Tensor eps = out.narrow(1, 0, in_channels_), rest = out.narrow(1, in_channels_, out.size(1) - in_channels_);
  at::Tensor cond_eps = eps.narrow(0, 0, n), uncond_eps = eps.narrow(0, n, eps.size(0) - n);
  at::Tensor half_eps = uncond_eps + (cond_eps - uncond_eps) * cfg_scale;
  return at::cat({at::cat({half_eps, half_eps}, 0), rest}, 1);
}

}  // namespace kvs::mar
