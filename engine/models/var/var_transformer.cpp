#include "engine/models/var/var_transformer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "kernels/linear.h"

namespace kvs::var {
namespace {

at::Tensor take_as(const TensorMap& weights, const std::string& name, at::Device device, at::ScalarType dtype) {
  auto it = weights.find(name);
  if (it == weights.end()) throw ModelMismatchError("VAR weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

// F.normalize(x, dim=-1): x / max(||x||_2, 1e-12), in float32 (a no-op cast there).
at::Tensor l2_normalize(const at::Tensor& x) {
  const at::Tensor xf = x.to(at::kFloat);
  return (xf / at::clamp_min(at::norm(xf, 2, {-1}, /*keepdim=*/true), 1e-12)).to(x.scalar_type());
}

// The level (scale index) of every flattened sequence position.
std::vector<int64_t> levels(const VarConfig& c) {
  std::vector<int64_t> out;
  for (int64_t si = 0; si < c.scales(); ++si) out.insert(out.end(), static_cast<size_t>(c.scale_tokens(si)), si);
  return out;
}

}  // namespace

VarTransformer::VarTransformer(VarConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype)
    : config_(std::move(config)), device_(device), dtype_(dtype) {
  config_.validate();
  auto take = [&](const TensorMap& w, const std::string& name, at::Device d) { return take_as(w, name, d, dtype); };
  // Sums and exponentials of stored values are taken in float32, then kept in the dtype.
  auto take_f32 = [&](const std::string& name) { return take_as(weights, name, device, at::kFloat); };
  word_embed_weight_ = take(weights, "word_embed.weight", device);
  word_embed_bias_ = take(weights, "word_embed.bias", device);
  class_emb_ = take(weights, "class_emb.weight", device);
  pos_start_ = take(weights, "pos_start", device);
  // lvl_pos = lvl_embed(lvl_1L) + pos_1LC, with lvl_1L recomputed from patch_nums.
  at::Tensor lvl = at::tensor(levels(config_), at::TensorOptions().dtype(at::kLong)).to(device);
  lvl_pos_ =
      (at::embedding(take_f32("lvl_embed.weight"), lvl).unsqueeze(0) + take_f32("pos_1LC")).to(dtype).contiguous();
  if (config_.shared_aln) {
    shared_ada_weight_ = take(weights, "shared_ada_lin.1.weight", device);
    shared_ada_bias_ = take(weights, "shared_ada_lin.1.bias", device);
  }
  head_ada_weight_ = take(weights, "head_nm.ada_lin.1.weight", device);
  head_ada_bias_ = take(weights, "head_nm.ada_lin.1.bias", device);
  head_weight_ = take(weights, "head.weight", device);
  head_bias_ = take(weights, "head.bias", device);
  const double max_scale_mul = static_cast<double>(std::log(100.0f));  // torch.log(torch.tensor(100)).item() (float32)
  for (int64_t i = 0; i < config_.depth; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    Block b;
    b.qkv_weight = take(weights, p + "attn.mat_qkv.weight", device);
    at::Tensor q_bias = take(weights, p + "attn.q_bias", device), v_bias = take(weights, p + "attn.v_bias", device);
    b.qkv_bias = at::cat({q_bias, at::zeros_like(q_bias), v_bias}).contiguous();
    if (config_.attn_l2_norm)
      b.query_scale = at::exp(at::clamp_max(take_f32(p + "attn.scale_mul_1H11"), max_scale_mul)).to(dtype);
    b.proj_weight = take(weights, p + "attn.proj.weight", device);
    b.proj_bias = take(weights, p + "attn.proj.bias", device);
    b.fc1_weight = take(weights, p + "ffn.fc1.weight", device);
    b.fc1_bias = take(weights, p + "ffn.fc1.bias", device);
    b.fc2_weight = take(weights, p + "ffn.fc2.weight", device);
    b.fc2_bias = take(weights, p + "ffn.fc2.bias", device);
    if (config_.shared_aln) {
      b.ada_gss = take(weights, p + "ada_gss", device);
    } else {
      b.ada_weight = take(weights, p + "ada_lin.1.weight", device);
      b.ada_bias = take(weights, p + "ada_lin.1.bias", device);
    }
    blocks_.push_back(std::move(b));
  }
}

VarCondition VarTransformer::condition(const at::Tensor& labels) const {
  const int64_t C = config_.embed_dim;
  VarCondition c;
  c.cond = at::embedding(class_emb_, labels.to(device_, at::kLong).reshape({-1}));
  const int64_t rows = c.cond.size(0);
  at::Tensor silu_cond = at::silu(c.cond);
  at::Tensor shared;  // shared_ada_lin(cond_BD): [rows, 1, 6, C]
  if (config_.shared_aln)
    shared = kernels::linear(silu_cond, shared_ada_weight_, shared_ada_bias_).view({rows, 1, 6, C});
  for (const Block& b : blocks_) {
    // Official order of the six chunks: gamma1, gamma2, scale1, scale2, shift1, shift2.
    at::Tensor ada = config_.shared_aln ? b.ada_gss + shared
                                        : kernels::linear(silu_cond, b.ada_weight, b.ada_bias).view({rows, 1, 6, C});
    auto parts = ada.unbind(2);
    c.blocks.push_back({parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]});
  }
  auto head = kernels::linear(silu_cond, head_ada_weight_, head_ada_bias_).view({rows, 1, 2, C}).unbind(2);
  c.head_scale = head[0];
  c.head_shift = head[1];
  return c;
}

at::Tensor VarTransformer::layer_norm(const at::Tensor& x) const {
  // Statistics in float32 (no affine parameters); the casts are no-ops in float32.
  return at::layer_norm(x.to(at::kFloat), {config_.embed_dim}, {}, {}, config_.norm_eps).to(x.scalar_type());
}

std::array<at::Tensor, 3> VarTransformer::qkv(const Block& block, const at::Tensor& x) const {
  const int64_t rows = x.size(0), t = x.size(1), h = config_.num_heads, d = config_.head_dim();
  // F.linear(x, mat_qkv, cat(q_bias, zero_k_bias, v_bias)).view(B, L, 3, H, hd).permute(2, 0, 3, 1, 4)
  auto parts =
      kernels::linear(x, block.qkv_weight, block.qkv_bias).view({rows, t, 3, h, d}).permute({2, 0, 3, 1, 4}).unbind(0);
  at::Tensor q = parts[0], k = parts[1];
  if (config_.attn_l2_norm) {
    q = l2_normalize(q) * block.query_scale;
    k = l2_normalize(k);
  }
  return {q, k, parts[2]};
}

at::Tensor VarTransformer::block_forward(int64_t index, const at::Tensor& x, const VarCondition& condition,
                                         const std::function<at::Tensor(int64_t, const at::Tensor&)>& attend) const {
  const Block& b = blocks_[static_cast<size_t>(index)];
  const auto& [gamma1, gamma2, scale1, scale2, shift1, shift2] = condition.blocks[static_cast<size_t>(index)];
  at::Tensor h = x + attend(index, layer_norm(x) * (scale1 + 1) + shift1) * gamma1;
  at::Tensor f = kernels::linear(
      at::gelu(kernels::linear(layer_norm(h) * (scale2 + 1) + shift2, b.fc1_weight, b.fc1_bias), "tanh"), b.fc2_weight,
      b.fc2_bias);
  return h + f * gamma2;
}

at::Tensor VarTransformer::logits(const at::Tensor& h, const VarCondition& condition) const {
  // AdaLNBeforeHead, then the head; the logits are returned in float32 for sampling.
  at::Tensor normed = layer_norm(h.to(at::kFloat)) * (condition.head_scale + 1) + condition.head_shift;
  return kernels::linear(normed.to(dtype_), head_weight_, head_bias_).to(at::kFloat);
}

at::Tensor VarTransformer::forward_teacher(const at::Tensor& labels, const at::Tensor& x_wo_first_l) const {
  const int64_t L = config_.total_tokens(), first_l = config_.first_l();
  const int64_t b = x_wo_first_l.size(0);
  if (x_wo_first_l.dim() != 3 || x_wo_first_l.size(1) != L - first_l || x_wo_first_l.size(2) != config_.cvae)
    throw InvalidArgumentError("teacher forcing input must be [B, " + std::to_string(L - first_l) + ", " +
                               std::to_string(config_.cvae) + "], got " + c10::str(x_wo_first_l.sizes()));
  const VarCondition cond = condition(labels);
  if (cond.rows() != b) throw InvalidArgumentError("teacher forcing: labels and inputs have different batch sizes");
  at::Tensor sos = cond.cond.unsqueeze(1).expand({b, first_l, config_.embed_dim}) + pos_start_;
  at::Tensor words = kernels::linear(x_wo_first_l.to(device_, dtype_), word_embed_weight_, word_embed_bias_);
  at::Tensor x = at::cat({sos, words}, 1) + lvl_pos_;
  // attn_bias_for_masking: 0 where level(query) >= level(key), -inf elsewhere.
  at::Tensor lvl = at::tensor(levels(config_), at::TensorOptions().dtype(at::kLong));
  at::Tensor mask = at::zeros({L, L}, at::TensorOptions().dtype(at::kFloat))
                        .masked_fill(lvl.view({L, 1}) < lvl.view({1, L}), -std::numeric_limits<float>::infinity())
                        .to(device_);
  const double scale = config_.attention_scale();
  auto attend = [&](int64_t index, const at::Tensor& xn) {
    const Block& blk = blocks_[static_cast<size_t>(index)];
    auto [q, k, v] = qkv(blk, xn);
    // Fused attention (flash kernel on CPU and GPU): the same softmax(q k^T * scale
    // + mask) v as upstream's explicit path, but without materialising the
    // [B, H, L, L] scores and their gradient — about half the time of a training
    // step's attention at L = 655 (measured fwd+bwd, one thread).
    at::Tensor out = at::scaled_dot_product_attention(q, k, v, mask.to(q.scalar_type()), 0.0, false, scale)
                         .transpose(1, 2)
                         .reshape({b, L, config_.embed_dim});
    return kernels::linear(out, blk.proj_weight, blk.proj_bias);
  };
  for (int64_t i = 0; i < config_.depth; ++i) x = block_forward(i, x, cond, attend);
  return logits(x, cond);
}

at::Tensor VarTransformer::first_scale_input(const VarCondition& condition) const {
  const int64_t rows = condition.rows(), first_l = config_.first_l();
  return condition.cond.unsqueeze(1).expand({rows, first_l, config_.embed_dim}) + pos_start_ +
         lvl_pos_.narrow(1, 0, first_l);
}

at::Tensor VarTransformer::scale_input(const at::Tensor& fhat_map, int64_t si) const {
  const int64_t b = fhat_map.size(0), n = config_.scale_tokens(si);
  at::Tensor tokens = fhat_map.to(device_, dtype_).reshape({b, config_.cvae, -1}).transpose(1, 2);
  if (tokens.size(1) != n)
    throw InvalidArgumentError("scale " + std::to_string(si) + " input has " + std::to_string(tokens.size(1)) +
                               " tokens, expected " + std::to_string(n));
  return kernels::linear(tokens, word_embed_weight_, word_embed_bias_) + lvl_pos_.narrow(1, config_.scale_begin(si), n);
}

KvStore VarTransformer::make_cache(int64_t rows, int64_t capacity) const {
  return KvStore(config_.depth, rows, config_.num_heads, config_.head_dim(), capacity,
                 at::TensorOptions().dtype(dtype_).device(device_));
}

at::Tensor VarTransformer::forward_scale(const at::Tensor& x_in, const VarCondition& condition, int64_t si,
                                         KvStore& cache, const ScaleObserver& observer) const {
  if (si < 0 || si >= config_.scales())
    throw InvalidArgumentError("scale " + std::to_string(si) + " does not exist (model has " +
                               std::to_string(config_.scales()) + " scales)");
  const int64_t rows = x_in.size(0), t = x_in.size(1);
  if (t != config_.scale_tokens(si) || rows != condition.rows() || rows != cache.rows())
    throw InvalidArgumentError("scale " + std::to_string(si) + ": input " + c10::str(x_in.sizes()) +
                               " does not fit the scale (" + std::to_string(config_.scale_tokens(si)) +
                               " tokens), the condition or the cache rows");
  std::vector<int64_t> positions(static_cast<size_t>(t));
  const int64_t begin = config_.scale_begin(si);
  for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = begin + i;
  // The store scales scores by 1/sqrt(head_dim): fold the model's scale into the queries.
  const double query_factor = config_.attention_scale() * std::sqrt(static_cast<double>(config_.head_dim()));
  auto attend = [&](int64_t index, const at::Tensor& xn) {
    const Block& blk = blocks_[static_cast<size_t>(index)];
    auto [q, k, v] = qkv(blk, xn);
    cache.append(index, k, v, positions);
    if (observer.on_keys) observer.on_keys(index, k);
    const at::Tensor scaled_q = query_factor == 1.0 ? q : q * query_factor;
    if (observer.on_queries) observer.on_queries(index, scaled_q);
    if (observer.before_attention) observer.before_attention(index, cache);
    KvAttention a = cache.attend(index, scaled_q, positions, /*causal=*/false, observer.want_probs,
                                 observer.want_key_mass);
    if (observer.on_attention) observer.on_attention(index, a, cache);
    return kernels::linear(a.out.transpose(1, 2).reshape({rows, t, config_.embed_dim}), blk.proj_weight, blk.proj_bias);
  };
  at::Tensor x = x_in.to(device_, dtype_);
  for (int64_t i = 0; i < config_.depth; ++i) {
    if (observer.before_layer) observer.before_layer(i);
    x = block_forward(i, x, condition, attend);
    if (observer.after_layer) observer.after_layer(i, cache);
  }
  return logits(x, condition);
}

}  // namespace kvs::var
