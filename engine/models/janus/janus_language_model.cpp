#include "engine/models/janus/janus_language_model.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/transformer_blocks.h"
#include "kernels/linear.h"

namespace kvs::janus {
namespace {

at::Tensor take(const TensorMap& weights, const std::string& name, at::Device device, at::ScalarType dtype) {
  auto it = weights.find(name);
  if (it == weights.end()) throw ModelMismatchError("Janus-Pro language model weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

}  // namespace

JanusLanguageModel::JanusLanguageModel(LanguageConfig config, const TensorMap& weights, at::Device device,
                                       at::ScalarType dtype)
    : config_(config), device_(device), dtype_(dtype) {
  embed_tokens_ = take(weights, "embed_tokens.weight", device, dtype);
  norm_ = take(weights, "norm.weight", device, dtype);
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    auto w = [&](const std::string& name) { return take(weights, p + name, device, dtype); };
    layers_.push_back(Layer{w("self_attn.q_proj.weight"), w("self_attn.k_proj.weight"), w("self_attn.v_proj.weight"),
                            w("self_attn.o_proj.weight"), w("mlp.gate_proj.weight"), w("mlp.up_proj.weight"),
                            w("mlp.down_proj.weight"), w("input_layernorm.weight"),
                            w("post_attention_layernorm.weight")});
  }
  // transformers' default RoPE: inv_freq = 1 / base^(2j / d), in float32.
  const int64_t d = config_.head_dim();
  at::Tensor exponents = at::arange(0, d, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                         static_cast<double>(d);
  inv_freq_ = (1.0 / at::pow(config_.rope_theta, exponents)).to(device);
}

at::Tensor JanusLanguageModel::embed_text(const at::Tensor& ids) const {
  return at::embedding(embed_tokens_, ids.to(device_, at::kLong));
}

at::Tensor JanusLanguageModel::rms_norm(const at::Tensor& x, const at::Tensor& weight) const {
  // LlamaRMSNorm: statistics in float32, the scale applied in the input dtype.
  return transformer_blocks::rms_norm(x, weight, config_.rms_norm_eps);
}

at::Tensor JanusLanguageModel::attention(int64_t index, const Layer& layer, const at::Tensor& x, const at::Tensor& cos,
                                         const at::Tensor& sin, KvStore* cache, const std::vector<int64_t>& positions,
                                         const StepObserver& observer) const {
  const int64_t b = x.size(0), t = x.size(1);
  const int64_t h = config_.num_attention_heads, hkv = config_.num_key_value_heads, d = config_.head_dim();
  at::Tensor q = transformer_blocks::rotate_half_rope(kernels::linear(x, layer.q).view({b, t, h, d}).transpose(1, 2),
                                                      cos, sin);
  at::Tensor k = transformer_blocks::rotate_half_rope(kernels::linear(x, layer.k).view({b, t, hkv, d}).transpose(1, 2),
                                                      cos, sin);
  at::Tensor v = kernels::linear(x, layer.v).view({b, t, hkv, d}).transpose(1, 2);
  if (observer.on_queries) observer.on_queries(index, q);
  at::Tensor out;
  if (cache != nullptr) {
    // Through the store: only retained entries are attended, at their true
    // positions (causal within a multi-token prefill).
    cache->append(index, k, v, positions);
    KvAttention attended = cache->attend(index, q, positions, /*causal=*/true, false, observer.want_key_mass);
    if (observer.on_attention) observer.on_attention(index, attended, *cache);
    out = attended.out;
  } else {
    // Teacher forcing: causal attention over the whole sequence.
    out = transformer_blocks::causal_grouped_attention(q, k, v);
  }
  return kernels::linear(out.transpose(1, 2).reshape({b, t, h * d}).to(x.scalar_type()), layer.o);
}

at::Tensor JanusLanguageModel::forward(const at::Tensor& h_in, int64_t first_position, KvStore* cache,
                                       const StepObserver& observer) const {
  const int64_t t = h_in.size(1);
  if (first_position + t > config_.max_position_embeddings)
    throw InvalidArgumentError("sequence of " + std::to_string(first_position + t) +
                               " positions exceeds the model's context of " +
                               std::to_string(config_.max_position_embeddings));
  std::vector<int64_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = first_position + i;
  // cos/sin of position x inv_freq, in float32, then in the activations' dtype
  // (as transformers' LlamaRotaryEmbedding does).
  at::Tensor pos =
      at::arange(first_position, first_position + t, at::TensorOptions().dtype(at::kLong)).to(device_).to(at::kFloat);
  at::Tensor freqs = pos.unsqueeze(1) * inv_freq_.unsqueeze(0);  // [T, D/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().to(dtype_), sin = emb.sin().to(dtype_);
  at::Tensor h = h_in.to(dtype_);
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    const Layer& layer = layers_[static_cast<size_t>(i)];
    h = h + attention(i, layer, rms_norm(h, layer.input_norm), cos, sin, cache, positions, observer);
    at::Tensor x = rms_norm(h, layer.post_norm);
    h = h + kernels::linear(at::silu(kernels::linear(x, layer.gate)) * kernels::linear(x, layer.up), layer.down);
  }
  return rms_norm(h, norm_);
}

KvStore JanusLanguageModel::make_cache(int64_t rows, int64_t capacity) const {
  return KvStore(config_.num_hidden_layers, rows, config_.num_key_value_heads, config_.head_dim(), capacity,
                 at::TensorOptions().dtype(dtype_).device(device_));
}

}  // namespace kvs::janus
