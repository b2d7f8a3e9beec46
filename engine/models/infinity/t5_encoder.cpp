#include "engine/models/infinity/t5_encoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "kernels/linear.h"

namespace kvs::infinity {

std::vector<std::pair<std::string, std::vector<int64_t>>> T5Encoder::weight_names(const T5Config& c) {
  const int64_t d = c.d_model, inner = c.inner_dim();
  std::vector<std::pair<std::string, std::vector<int64_t>>> out = {{"shared.weight", {c.vocab_size, d}}};
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.block." + std::to_string(i) + ".layer.";
    out.push_back({p + "0.layer_norm.weight", {d}});
    for (const char* m : {"q", "k", "v"}) out.push_back({p + "0.SelfAttention." + m + ".weight", {inner, d}});
    out.push_back({p + "0.SelfAttention.o.weight", {d, inner}});
    if (i == 0)
      out.push_back(
          {p + "0.SelfAttention.relative_attention_bias.weight", {c.relative_attention_num_buckets, c.num_heads}});
    out.push_back({p + "1.layer_norm.weight", {d}});
    if (c.gated()) {
      out.push_back({p + "1.DenseReluDense.wi_0.weight", {c.d_ff, d}});
      out.push_back({p + "1.DenseReluDense.wi_1.weight", {c.d_ff, d}});
    } else {
      out.push_back({p + "1.DenseReluDense.wi.weight", {c.d_ff, d}});
    }
    out.push_back({p + "1.DenseReluDense.wo.weight", {d, c.d_ff}});
  }
  out.push_back({"encoder.final_layer_norm.weight", {d}});
  return out;
}

T5Encoder::T5Encoder(T5Config config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                     at::ScalarType dtype)
    : config_(std::move(config)), device_(device), dtype_(dtype) {
  config_.validate();
  std::map<std::string, at::Tensor> taken;
  for (const auto& [name, shape] : weight_names(config_)) {
    auto it = weights.find(name);
    if (it == weights.end()) throw ModelMismatchError("T5 weights: missing tensor " + name);
    if (it->second.sizes().vec() != shape)
      throw ModelMismatchError("T5 weights: tensor " + name + " has shape " + c10::str(it->second.sizes()) +
                               ", expected " + c10::str(at::IntArrayRef(shape)));
    // Norm weights and "wo" stay float32 (transformers keeps wo in fp32 for half runs).
    const bool f32 = name.find("layer_norm") != std::string::npos || name.find(".wo.") != std::string::npos ||
                     name.find("relative_attention_bias") != std::string::npos;
    taken[name] = it->second.to(device, f32 ? at::kFloat : dtype).contiguous();
  }
  shared_ = taken.at("shared.weight");
  relative_bias_ = taken.at("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  final_norm_ = taken.at("encoder.final_layer_norm.weight");
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    const std::string p = "encoder.block." + std::to_string(i) + ".layer.";
    Layer l;
    l.ln1 = taken.at(p + "0.layer_norm.weight");
    l.q = taken.at(p + "0.SelfAttention.q.weight");
    l.k = taken.at(p + "0.SelfAttention.k.weight");
    l.v = taken.at(p + "0.SelfAttention.v.weight");
    l.o = taken.at(p + "0.SelfAttention.o.weight");
    l.ln2 = taken.at(p + "1.layer_norm.weight");
    if (config_.gated()) {
      l.wi0 = taken.at(p + "1.DenseReluDense.wi_0.weight");
      l.wi1 = taken.at(p + "1.DenseReluDense.wi_1.weight");
    } else {
      l.wi0 = taken.at(p + "1.DenseReluDense.wi.weight");
    }
    l.wo = taken.at(p + "1.DenseReluDense.wo.weight");
    layers_.push_back(std::move(l));
  }
}

at::Tensor T5Encoder::rms_norm(const at::Tensor& x, const at::Tensor& weight) const {
  // T5LayerNorm: the variance in float32, no mean subtracted, no bias.
  const at::Tensor xf = x.to(at::kFloat);
  return weight * (xf * at::rsqrt(xf.pow(2).mean({-1}, /*keepdim=*/true) + config_.layer_norm_epsilon));
}

at::Tensor T5Encoder::position_buckets(int64_t n) const {
  // _relative_position_bucket(key - query, bidirectional=True): half the buckets
  // per direction; distances below a quarter exact, the rest logarithmic up to max_distance.
  const int64_t half = config_.relative_attention_num_buckets / 2, exact = half / 2;
  const auto opts = at::TensorOptions().dtype(at::kLong);
  const at::Tensor pos = at::arange(n, opts);
  const at::Tensor relative = pos.view({1, n}) - pos.view({n, 1});
  const at::Tensor buckets = (relative > 0).to(at::kLong) * half;
  const at::Tensor distance = relative.abs();
  at::Tensor large = exact + (at::log(distance.to(at::kFloat) / static_cast<double>(exact)) /
                              std::log(static_cast<double>(config_.relative_attention_max_distance) /
                                       static_cast<double>(exact)) *
                              static_cast<double>(half - exact))
                                 .to(at::kLong);
  large = at::minimum(large, at::full_like(large, half - 1));
  return buckets + at::where(distance < exact, distance, large);
}

at::Tensor T5Encoder::encode(const at::Tensor& ids_in) const {
  const at::Tensor ids = ids_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t n = ids.size(0), h = config_.num_heads, dk = config_.d_kv;
  if (n == 0) throw InvalidArgumentError("T5: an empty sequence (every text has at least its </s>)");
  if (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= config_.vocab_size)
    throw InvalidArgumentError("T5: a token id is outside the vocabulary of " + std::to_string(config_.vocab_size));
  // The bias [H, n, n], computed once and shared by every layer.
  const at::Tensor bias = at::embedding(relative_bias_, position_buckets(n).to(device_)).permute({2, 0, 1});
  at::Tensor x = at::embedding(shared_, ids.to(device_)).to(at::kFloat);
  auto linear = [&](const at::Tensor& in, const at::Tensor& w) {
    return kernels::linear(in.to(w.scalar_type()), w).to(at::kFloat);
  };
  for (const Layer& l : layers_) {
    const at::Tensor normed = rms_norm(x, l.ln1);
    const at::Tensor q = linear(normed, l.q).view({n, h, dk}).transpose(0, 1);
    const at::Tensor k = linear(normed, l.k).view({n, h, dk}).transpose(0, 1);
    const at::Tensor v = linear(normed, l.v).view({n, h, dk}).transpose(0, 1);
    const at::Tensor scores = at::matmul(q, k.transpose(1, 2)) + bias;  // no 1/sqrt(d_kv) in T5
    const at::Tensor attended = at::matmul(at::softmax(scores, -1), v).transpose(0, 1).reshape({n, h * dk});
    x = x + linear(attended, l.o);
    const at::Tensor f = rms_norm(x, l.ln2);
    at::Tensor hidden;
    if (config_.gated()) {
      // gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as transformers writes it.
      const at::Tensor g = linear(f, l.wi0);
      const at::Tensor gelu = 0.5 * g * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * at::pow(g, 3.0))));
      hidden = gelu * linear(f, l.wi1);
    } else {
      hidden = at::relu(linear(f, l.wi0));
    }
    x = x + linear(hidden, l.wo);
  }
  return rms_norm(x, final_norm_);
}

}  // namespace kvs::infinity
