#include "engine/models/lumina/chameleon_language_model.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/transformer_blocks.h"
#include "kernels/linear.h"

namespace kvs::lumina {
namespace {

at::Tensor take(const TensorMap& weights, const std::string& name, at::Device device, at::ScalarType dtype) {
  auto it = weights.find(name);
  if (it == weights.end()) throw ModelMismatchError("Lumina-mGPT language model weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

// ChameleonLayerNorm: layer_norm over head_dim without affine, eps 1e-5 (fixed
// in the official code), then the per-head weight and bias. x [B, T, heads, D].
at::Tensor qk_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return at::layer_norm(x, {x.size(-1)}, {}, {}, 1e-5) * weight + bias;
}

}  // namespace

ChameleonLanguageModel::ChameleonLanguageModel(ChameleonConfig config, const TensorMap& weights, at::Device device,
                                               at::ScalarType dtype)
    : config_(config), device_(device), dtype_(dtype) {
  embed_tokens_ = take(weights, "model.embed_tokens.weight", device, dtype);
  norm_ = take(weights, "model.norm.weight", device, dtype);
  lm_head_ = take(weights, "lm_head.weight", device, dtype);
  const int64_t q_group = config_.num_attention_heads / config_.model_parallel_size;
  const int64_t k_group = config_.num_key_value_heads / config_.model_parallel_size;
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    auto w = [&](const std::string& name) { return take(weights, p + name, device, dtype); };
    // weight.repeat_interleave(heads / mp, 0): row r serves heads r*group .. r*group+group-1.
    auto per_head = [&](const std::string& name, int64_t group) { return w(name).repeat_interleave(group, 0); };
    layers_.push_back(Layer{w("self_attn.q_proj.weight"), w("self_attn.k_proj.weight"), w("self_attn.v_proj.weight"),
                            w("self_attn.o_proj.weight"), w("mlp.gate_proj.weight"), w("mlp.up_proj.weight"),
                            w("mlp.down_proj.weight"), w("input_layernorm.weight"),
                            w("post_attention_layernorm.weight"), per_head("self_attn.q_norm.weight", q_group),
                            per_head("self_attn.q_norm.bias", q_group), per_head("self_attn.k_norm.weight", k_group),
                            per_head("self_attn.k_norm.bias", k_group)});
  }
  // ChameleonRotaryEmbedding: inv_freq = 1 / base^(2j / d) (int64 arange -> float32).
  const int64_t d = config_.head_dim();
  at::Tensor exponents = at::arange(0, d, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                         static_cast<double>(d);
  inv_freq_ = (1.0 / at::pow(config_.rope_theta, exponents)).to(device);
}

at::Tensor ChameleonLanguageModel::embed(const at::Tensor& ids) const {
  return at::embedding(embed_tokens_, ids.to(device_, at::kLong));
}

at::Tensor ChameleonLanguageModel::logits(const at::Tensor& hidden) const {
  return kernels::linear(hidden.to(dtype_), lm_head_).to(at::kFloat);
}

at::Tensor ChameleonLanguageModel::attention(int64_t index, const Layer& layer, const at::Tensor& x,
                                             const at::Tensor& cos, const at::Tensor& sin, KvStore* cache,
                                             const std::vector<int64_t>& positions,
                                             const StepObserver& observer) const {
  const int64_t b = x.size(0), t = x.size(1);
  const int64_t h = config_.num_attention_heads, hkv = config_.num_key_value_heads, d = config_.head_dim();
  at::Tensor q = qk_norm(kernels::linear(x, layer.q).view({b, t, h, d}), layer.q_norm_w, layer.q_norm_b);
  at::Tensor k = qk_norm(kernels::linear(x, layer.k).view({b, t, hkv, d}), layer.k_norm_w, layer.k_norm_b);
  q = transformer_blocks::rotate_half_rope(q.transpose(1, 2), cos, sin);
  k = transformer_blocks::rotate_half_rope(k.transpose(1, 2), cos, sin);
  at::Tensor v = kernels::linear(x, layer.v).view({b, t, hkv, d}).transpose(1, 2);
  if (observer.on_queries) observer.on_queries(index, q);
  at::Tensor out;
  if (cache != nullptr) {
    cache->append(index, k, v, positions);
    KvAttention attended = cache->attend(index, q, positions, /*causal=*/true, false, observer.want_key_mass);
    if (observer.on_attention) observer.on_attention(index, attended, *cache);
    out = attended.out;
  } else {
    out = transformer_blocks::causal_grouped_attention(q, k, v);
  }
  return kernels::linear(out.transpose(1, 2).reshape({b, t, h * d}).to(x.scalar_type()), layer.o);
}

at::Tensor ChameleonLanguageModel::forward(const at::Tensor& h_in, int64_t first_position, KvStore* cache,
                                           const StepObserver& observer,
                                           const std::vector<int64_t>& rope_offsets) const {
  const int64_t b = h_in.size(0), t = h_in.size(1);
  // No context check: RoPE has no scaling and no table to run past, and the
  // official loop does not stop at max_position_embeddings (max_new_tokens
  // overrides the max_length it feeds), so a 1024-px image runs past 4096.
  if (!rope_offsets.empty() && static_cast<int64_t>(rope_offsets.size()) != b)
    throw InvalidArgumentError("ChameleonLanguageModel::forward: one RoPE offset per row");
  std::vector<int64_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = first_position + i;
  // cos/sin of position x inv_freq in float32, then in the activations' dtype;
  // [rows or 1, 1, T, D].
  at::Tensor pos = at::arange(first_position, first_position + t, at::TensorOptions().dtype(at::kLong)).view({1, t});
  if (!rope_offsets.empty()) pos = pos - at::tensor(rope_offsets, at::TensorOptions().dtype(at::kLong)).view({b, 1});
  at::Tensor freqs = pos.to(device_).to(at::kFloat).unsqueeze(-1) * inv_freq_.view({1, 1, -1});
  at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);
  at::Tensor cos = emb.cos().to(dtype_), sin = emb.sin().to(dtype_);
  at::Tensor h = h_in.to(dtype_);
  const double eps = config_.rms_norm_eps;
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    const Layer& layer = layers_[static_cast<size_t>(i)];
    auto mlp = [&](const at::Tensor& x) {
      return kernels::linear(at::silu(kernels::linear(x, layer.gate)) * kernels::linear(x, layer.up), layer.down);
    };
    if (config_.swin_norm) {
      h = h + transformer_blocks::rms_norm(attention(i, layer, h, cos, sin, cache, positions, observer),
                                           layer.input_norm, eps);
      h = h + transformer_blocks::rms_norm(mlp(h), layer.post_norm, eps);
    } else {
      h = h + attention(i, layer, transformer_blocks::rms_norm(h, layer.input_norm, eps), cos, sin, cache, positions,
                        observer);
      h = h + mlp(transformer_blocks::rms_norm(h, layer.post_norm, eps));
    }
  }
  return transformer_blocks::rms_norm(h, norm_, eps);
}

KvStore ChameleonLanguageModel::make_cache(int64_t rows, int64_t capacity) const {
  return KvStore(config_.num_hidden_layers, rows, config_.num_key_value_heads, config_.head_dim(), capacity,
                 at::TensorOptions().dtype(dtype_).device(device_));
}

}  // namespace kvs::lumina
