#include "engine/models/llamagen/llamagen_gpt.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/models/blocks/transformer_blocks.h"
#include "engine/models/llamagen/rope_2d.h"
#include "kernels/linear.h"

namespace kvs::llamagen {
namespace {

at::Tensor take_as(const TensorMap& weights, const std::string& name, at::Device device, at::ScalarType dtype) {
  auto it = weights.find(name);
  if (it == weights.end()) throw ModelMismatchError("LlamaGen GPT weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

}  // namespace

LlamaGenGpt::LlamaGenGpt(GptConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype)
    : config_(std::move(config)), device_(device), dtype_(dtype) {
  config_.validate();
  auto take = [&](const TensorMap& w, const std::string& name, at::Device d) { return take_as(w, name, d, dtype); };
  tok_embeddings_ = take(weights, "tok_embeddings.weight", device);
  cls_embedding_ = take(weights, "cls_embedding.embedding_table.weight", device);
  norm_ = take(weights, "norm.weight", device);
  output_ = take(weights, "output.weight", device);
  for (int64_t i = 0; i < config_.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    layers_.push_back(
        Layer{take(weights, p + "attention.wqkv.weight", device), take(weights, p + "attention.wo.weight", device),
              take(weights, p + "feed_forward.w1.weight", device), take(weights, p + "feed_forward.w2.weight", device),
              take(weights, p + "feed_forward.w3.weight", device), take(weights, p + "attention_norm.weight", device),
              take(weights, p + "ffn_norm.weight", device)});
  }
  rope_ = rope_2d_table(config_.grid_size(), config_.head_dim(), config_.rope_base, config_.cls_token_num).to(device);
}

at::Tensor LlamaGenGpt::rms_norm(const at::Tensor& x, const at::Tensor& weight) const {
  // RMSNorm in float32: x * rsqrt(mean(x^2) + eps), then the learned scale.
  return transformer_blocks::rms_norm(x, weight, config_.norm_eps);
}

at::Tensor LlamaGenGpt::feed_forward(const Layer& layer, const at::Tensor& x) const {
  // SwiGLU: w2(silu(w1 x) * w3 x)
  return kernels::linear(at::silu(kernels::linear(x, layer.w1)) * kernels::linear(x, layer.w3), layer.w2);
}

at::Tensor LlamaGenGpt::image_embeddings(const at::Tensor& tokens) const {
  return at::embedding(tok_embeddings_, tokens);
}

at::Tensor LlamaGenGpt::rope_rows(int64_t first, int64_t count) const { return rope_.narrow(0, first, count); }

LlamaGenGpt::Qkv LlamaGenGpt::layer_qkv(int64_t layer_index, const at::Tensor& h, const at::Tensor& rope) const {
  const Layer& layer = layers_[static_cast<size_t>(layer_index)];
  const int64_t b = h.size(0), t = h.size(1);
  const int64_t n_head = config_.n_head, hkv = config_.kv_heads(), d = config_.head_dim();
  at::Tensor qkv = kernels::linear(rms_norm(h, layer.attention_norm), layer.wqkv);
  auto parts = qkv.split_with_sizes({config_.dim, hkv * d, hkv * d}, -1);
  return Qkv{apply_rope(parts[0].reshape({b, t, n_head, d}), rope).transpose(1, 2),  // [B,H,T,D]
             apply_rope(parts[1].reshape({b, t, hkv, d}), rope).transpose(1, 2),     // [B,Hkv,T,D]
             parts[2].reshape({b, t, hkv, d}).transpose(1, 2)};
}

at::Tensor LlamaGenGpt::layer_output(int64_t layer_index, const at::Tensor& h, const at::Tensor& attention) const {
  const Layer& layer = layers_[static_cast<size_t>(layer_index)];
  const int64_t b = h.size(0), t = h.size(1);
  at::Tensor out = h + kernels::linear(attention.transpose(1, 2).reshape({b, t, config_.dim}), layer.wo);
  return out + feed_forward(layer, rms_norm(out, layer.ffn_norm));
}

at::Tensor LlamaGenGpt::logits(const at::Tensor& h) const {
  return kernels::linear(rms_norm(h, norm_), output_).to(at::kFloat);
}

at::Tensor LlamaGenGpt::attend_cached(int64_t layer_index, const Qkv& qkv, KvStore& cache,
                                      const std::vector<int64_t>& positions, const StepObserver& observer) const {
  if (observer.on_queries) observer.on_queries(layer_index, qkv.q);
  // Only retained entries are attended (ragged per head once a policy has
  // evicted), with the true positions for causality.
  cache.append(layer_index, qkv.k, qkv.v, positions);
  KvAttention attention = cache.attend(layer_index, qkv.q, positions, /*causal=*/true, false, observer.want_key_mass);
  if (observer.on_attention) observer.on_attention(layer_index, attention, cache);
  return attention.out;
}

at::Tensor LlamaGenGpt::attend(int64_t layer_index, const Qkv& qkv, KvStore* cache,
                               const std::vector<int64_t>& positions, const StepObserver& observer,
                               TeacherAttention teacher) const {
  if (cache != nullptr) return attend_cached(layer_index, qkv, *cache, positions, observer);
  // Teacher forcing over the whole sequence: plain causal attention.
  const at::Tensor& q = qkv.q;
  at::Tensor k = qkv.k, v = qkv.v;
  const int64_t b = q.size(0), t = q.size(2);
  const int64_t h = config_.n_head, hkv = config_.kv_heads(), d = config_.head_dim();
  const int64_t group = h / hkv;
  if (observer.on_queries) observer.on_queries(layer_index, q);
  if (teacher == TeacherAttention::Fused) {
    if (group > 1) {
      k = k.repeat_interleave(group, 1);
      v = v.repeat_interleave(group, 1);
    }
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/t > 1);
  }
  const int64_t l = k.size(2);
  // Query head j uses kv head j / group (upstream: repeat_interleave on the kv
  // heads). Grouping the queries avoids materialising the repeated keys.
  at::Tensor qg = q.reshape({b, hkv, group * t, d});
  at::Tensor scores = at::matmul(qg, k.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  if (t > 1) {
    at::Tensor mask = at::triu(at::ones({t, l}, at::TensorOptions().dtype(at::kBool)), 1).to(device_);
    scores = scores.view({b, hkv, group, t, l})
                 .masked_fill(mask, -std::numeric_limits<float>::infinity())
                 .view({b, hkv, group * t, l});
  }
  at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(v.scalar_type());  // a no-op in float32
  return at::matmul(probs, v).view({b, h, t, d});
}

at::Tensor LlamaGenGpt::run_layers(at::Tensor h, int64_t first_position, KvStore* cache, const StepObserver& observer,
                                   TeacherAttention teacher) const {
  const int64_t t = h.size(1);
  std::vector<int64_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) positions[i] = first_position + i;
  const at::Tensor rope = rope_rows(first_position, t);
  for (int64_t i = 0; i < config_.n_layer; ++i)
    h = layer_output(i, h, attend(i, layer_qkv(i, h, rope), cache, positions, observer, teacher));
  return logits(h);
}

at::Tensor LlamaGenGpt::forward_teacher(const at::Tensor& labels, const at::Tensor& tokens,
                                        TeacherAttention attention) const {
  const int64_t total = config_.cls_token_num + tokens.size(1);
  if (total > rope_.size(0))
    throw InvalidArgumentError("teacher forward: " + std::to_string(tokens.size(1)) +
                               " tokens exceed the model's block size " + std::to_string(config_.block_size));
  at::Tensor cond = at::embedding(cls_embedding_, labels.to(device_, at::kLong)).unsqueeze(1);
  at::Tensor h = at::cat({cond, image_embeddings(tokens.to(device_, at::kLong))}, 1);
  return run_layers(h, 0, nullptr, {}, attention);
}

KvStore LlamaGenGpt::make_cache(int64_t rows, int64_t capacity) const {
  return KvStore(config_.n_layer, rows, config_.kv_heads(), config_.head_dim(), capacity,
                 at::TensorOptions().dtype(dtype_).device(device_));
}

at::Tensor LlamaGenGpt::prefill(const at::Tensor& labels, KvStore& cache) const {
  // c2i: the label embedding is one token (cls_token_num == 1, checked by validate()).
  at::Tensor h = at::embedding(cls_embedding_, labels.to(device_, at::kLong)).unsqueeze(1);
  at::Tensor logits = run_layers(h, 0, &cache);
  return logits.select(1, logits.size(1) - 1);
}

at::Tensor LlamaGenGpt::decode_step(const at::Tensor& tokens, int64_t position, KvStore& cache,
                                    const StepObserver& observer) const {
  if (position >= rope_.size(0))
    throw InvalidArgumentError("decode position " + std::to_string(position) + " is beyond the block size");
  at::Tensor h = image_embeddings(tokens.to(device_, at::kLong).view({-1, 1}));
  return run_layers(h, position, &cache, observer).select(1, 0);
}

}  // namespace kvs::llamagen
