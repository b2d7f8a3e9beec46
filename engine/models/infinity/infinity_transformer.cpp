#include "engine/models/infinity/infinity_transformer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "kernels/linear.h"

namespace kvs::infinity {
namespace {

at::Tensor take(const TensorMap& weights, const std::string& name, at::Device device, at::ScalarType dtype) {
  auto it = weights.find(name);
  if (it == weights.end()) throw ModelMismatchError("Infinity weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

// F.normalize(x, dim=-1, eps=1e-12) in float32.
at::Tensor l2_normalize(const at::Tensor& x) {
  return x / at::clamp_min(at::norm(x, 2, {-1}, /*keepdim=*/true), 1e-12);
}

at::Tensor round_to_bf16(const at::Tensor& x) { return x.to(at::kBFloat16).to(at::kFloat); }

// apply_rotary_emb on x [rows, H, T, hd] (float32) with cos/sin [T, hd/2]:
// adjacent channel pairs (2k, 2k+1) -> (cos x0 - sin x1, sin x0 + cos x1).
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const auto sizes = x.sizes().vec();
  at::Tensor pairs = x.reshape({sizes[0], sizes[1], sizes[2], sizes[3] / 2, 2});
  at::Tensor x0 = pairs.select(-1, 0), x1 = pairs.select(-1, 1);
  return at::stack({cos * x0 - sin * x1, sin * x0 + cos * x1}, -1).reshape(sizes);
}

}  // namespace

at::Tensor varlen_cross_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const std::vector<int64_t>& offsets, double scale, at::Tensor* row0_mass) {
  const int64_t rows = q.size(0), lq = q.size(1), heads = q.size(2), hd = q.size(3);
  if (static_cast<int64_t>(offsets.size()) != rows + 1)
    throw InvalidArgumentError("cross-attention: " + std::to_string(rows) + " query rows but " +
                               std::to_string(offsets.size() - 1) + " texts");
  const at::Tensor qb = round_to_bf16(q.to(at::kFloat)).permute({0, 2, 1, 3});  // [rows, H, Lq, hd]
  const at::Tensor kb = round_to_bf16(k.to(at::kFloat)), vb = round_to_bf16(v.to(at::kFloat));
  std::vector<at::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t begin = offsets[static_cast<size_t>(b)], n = offsets[static_cast<size_t>(b) + 1] - begin;
    const at::Tensor kr = kb.narrow(0, begin, n).permute({1, 2, 0});          // [H, hd, n]
    const at::Tensor vr = vb.narrow(0, begin, n).permute({1, 0, 2});          // [H, n, hd]
    const at::Tensor probs = at::softmax(at::matmul(qb[b], kr) * scale, -1);  // [H, Lq, n]
    if (b == 0 && row0_mass) *row0_mass = probs.sum(1).mean(0).to(at::kCPU, at::kFloat);
    outputs.push_back(at::matmul(probs, vr).permute({1, 0, 2}).reshape({lq, heads * hd}));
  }
  return round_to_bf16(at::stack(outputs, 0));
}

std::vector<std::pair<std::string, std::vector<int64_t>>> InfinityTransformer::weight_shapes(const InfinityConfig& c) {
  const int64_t C = c.embed_dim, D = c.embed_dim, Ct5 = c.text_channels, H = c.num_heads, M = c.mlp_hidden();
  const int64_t ph = c.pool_heads(), bits = c.token_bits();
  std::vector<std::pair<std::string, std::vector<int64_t>>> s = {
      {"cfg_uncond", {c.text_maxlen, Ct5}},
      {"pos_start", {1, 1, C}},
      {"lvl_embed.weight", {c.level_embeddings, C}},
      {"text_norm.weight", {Ct5}},
      {"text_proj_for_sos.ca.mat_q", {1, ph, D / ph}},
      {"text_proj_for_sos.ca.mat_kv.weight", {2 * D, Ct5}},
      {"text_proj_for_sos.ca.v_bias", {D}},
      {"text_proj_for_sos.ca.zero_k_bias", {D}},
      {"text_proj_for_sos.ca.proj.weight", {D, D}},
      {"text_proj_for_sos.ca.proj.bias", {D}},
      {"text_proj_for_ca.0.weight", {D, Ct5}},
      {"text_proj_for_ca.0.bias", {D}},
      {"text_proj_for_ca.2.weight", {D, D}},
      {"text_proj_for_ca.2.bias", {D}},
      {"word_embed.weight", {C, bits}},
      {"word_embed.bias", {C}},
      {"shared_ada_lin.1.weight", {6 * C, D}},
      {"shared_ada_lin.1.bias", {6 * C}},
      {"head_nm.ada_lin.1.weight", {2 * C, D}},
      {"head_nm.ada_lin.1.bias", {2 * C}},
      {"head.weight", {2 * bits, C}},
      {"head.bias", {2 * bits}},
  };
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string p = c.block_prefix(i);
    for (auto&& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"ada_gss", {1, 1, 6, C}},
             {"sa.scale_mul_1H11", {1, H, 1, 1}},
             {"sa.q_bias", {C}},
             {"sa.v_bias", {C}},
             {"sa.zero_k_bias", {C}},
             {"sa.mat_qkv.weight", {3 * C, C}},
             {"sa.proj.weight", {C, C}},
             {"sa.proj.bias", {C}},
             {"ca.mat_q.weight", {C, C}},
             {"ca.mat_q.bias", {C}},
             {"ca.mat_kv.weight", {2 * C, D}},
             {"ca.v_bias", {C}},
             {"ca.zero_k_bias", {C}},
             {"ca.proj.weight", {C, C}},
             {"ca.proj.bias", {C}},
             {"ca_norm.weight", {C}},
             {"ca_norm.bias", {C}},
             {"ffn.fc1.weight", {M, C}},
             {"ffn.fc1.bias", {M}},
             {"ffn.fc2.weight", {C, M}},
             {"ffn.fc2.bias", {C}},
         })
      s.emplace_back(p + name, shape);
  }
  return s;
}

InfinityTransformer::InfinityTransformer(InfinityConfig config, const TensorMap& weights, at::Device device,
                                         at::ScalarType dtype)
    : config_(std::move(config)), device_(device), dtype_(dtype) {
  config_.validate();
  auto w = [&](const std::string& name) { return take(weights, name, device, dtype); };
  auto f32 = [&](const std::string& name) { return take(weights, name, device, at::kFloat); };
  // What float32 arithmetic reads stays float32 (AdaLN, norms, RoPE'd attention scales, logits).
  cfg_uncond_ = f32("cfg_uncond");
  pos_start_ = f32("pos_start");
  lvl_embed_ = f32("lvl_embed.weight");
  text_norm_weight_ = f32("text_norm.weight");
  pool_query_ = f32("text_proj_for_sos.ca.mat_q");
  pool_kv_weight_ = w("text_proj_for_sos.ca.mat_kv.weight");
  pool_kv_bias_ = at::cat({f32("text_proj_for_sos.ca.zero_k_bias"), f32("text_proj_for_sos.ca.v_bias")}).to(dtype);
  pool_proj_weight_ = w("text_proj_for_sos.ca.proj.weight");
  pool_proj_bias_ = w("text_proj_for_sos.ca.proj.bias");
  ca_proj1_weight_ = w("text_proj_for_ca.0.weight");
  ca_proj1_bias_ = w("text_proj_for_ca.0.bias");
  ca_proj2_weight_ = w("text_proj_for_ca.2.weight");
  ca_proj2_bias_ = w("text_proj_for_ca.2.bias");
  word_embed_weight_ = w("word_embed.weight");
  word_embed_bias_ = w("word_embed.bias");
  shared_ada_weight_ = f32("shared_ada_lin.1.weight");
  shared_ada_bias_ = f32("shared_ada_lin.1.bias");
  head_ada_weight_ = f32("head_nm.ada_lin.1.weight");
  head_ada_bias_ = f32("head_nm.ada_lin.1.bias");
  head_weight_ = f32("head.weight");
  head_bias_ = f32("head.bias");
  const double max_scale_mul = static_cast<double>(std::log(100.0f));  // torch.log(torch.tensor(100)).item()
  for (int64_t i = 0; i < config_.depth; ++i) {
    const std::string p = config_.block_prefix(i);
    Block b;
    b.ada_gss = f32(p + "ada_gss");
    b.qkv_weight = w(p + "sa.mat_qkv.weight");
    b.qkv_bias = at::cat({f32(p + "sa.q_bias"), f32(p + "sa.zero_k_bias"), f32(p + "sa.v_bias")}).to(dtype);
    b.query_scale = at::exp(at::clamp_max(f32(p + "sa.scale_mul_1H11"), max_scale_mul));
    b.proj_weight = w(p + "sa.proj.weight");
    b.proj_bias = w(p + "sa.proj.bias");
    b.ca_q_weight = w(p + "ca.mat_q.weight");
    b.ca_q_bias = w(p + "ca.mat_q.bias");
    b.ca_kv_weight = w(p + "ca.mat_kv.weight");
    b.ca_kv_bias = at::cat({f32(p + "ca.zero_k_bias"), f32(p + "ca.v_bias")}).to(dtype);
    b.ca_proj_weight = w(p + "ca.proj.weight");
    b.ca_proj_bias = w(p + "ca.proj.bias");
    b.ca_norm_weight = f32(p + "ca_norm.weight");
    b.ca_norm_bias = f32(p + "ca_norm.bias");
    b.fc1_weight = w(p + "ffn.fc1.weight");
    b.fc1_bias = w(p + "ffn.fc1.bias");
    b.fc2_weight = w(p + "ffn.fc2.weight");
    b.fc2_bias = w(p + "ffn.fc2.bias");
    blocks_.push_back(std::move(b));
  }
}

at::Tensor InfinityTransformer::linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const {
  return kernels::linear(x.to(weight.scalar_type()), weight, bias).to(at::kFloat);
}

at::Tensor InfinityTransformer::ada_norm(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift) const {
  // fused_ada_layer_norm: F.layer_norm without affine in float32, then x * (scale + 1) + shift.
  return at::layer_norm(x, {config_.embed_dim}, {}, {}, config_.norm_eps) * (scale + 1) + shift;
}

at::Tensor InfinityTransformer::unconditional_text(int64_t length) const {
  if (length <= 0 || length > config_.text_maxlen)
    throw InvalidArgumentError("a prompt of " + std::to_string(length) + " tokens does not fit Infinity's " +
                               std::to_string(config_.text_maxlen) + " text rows");
  return cfg_uncond_.narrow(0, 0, length);
}

InfinityText InfinityTransformer::encode_text(const at::Tensor& text_rows, const std::vector<int64_t>& lengths) const {
  const int64_t C = config_.embed_dim, D = config_.embed_dim, rows = static_cast<int64_t>(lengths.size());
  InfinityText t;
  t.offsets.push_back(0);
  for (const int64_t n : lengths) {
    if (n <= 0) throw InvalidArgumentError("every prompt needs at least one text token (its </s>)");
    t.offsets.push_back(t.offsets.back() + n);
  }
  if (text_rows.dim() != 2 || text_rows.size(0) != t.offsets.back() || text_rows.size(1) != config_.text_channels)
    throw InvalidArgumentError("Infinity text: expected [" + std::to_string(t.offsets.back()) + ", " +
                               std::to_string(config_.text_channels) + "] T5 rows, got " + c10::str(text_rows.sizes()));
  // text_norm (basic.py rms_norm_impl in float32): x * rsqrt(mean(x^2) + eps) * w.
  const at::Tensor x = text_rows.to(device_, at::kFloat);
  t.normed = x * at::rsqrt(x.pow(2).mean({-1}, /*keepdim=*/true) + config_.norm_eps) * text_norm_weight_;
  // TextAttentivePool: one learned query per row over its own text.
  const int64_t ph = config_.pool_heads(), pool_hd = D / ph, n = t.normed.size(0);
  const at::Tensor pool_kv = linear(t.normed, pool_kv_weight_, pool_kv_bias_).view({n, 2, ph, pool_hd});
  const at::Tensor pool_q = pool_query_.view({1, 1, ph, pool_hd}).expand({rows, 1, ph, pool_hd});
  const at::Tensor pooled = varlen_cross_attention(pool_q, pool_kv.select(1, 0), pool_kv.select(1, 1), t.offsets,
                                                   1.0 / std::sqrt(static_cast<double>(pool_hd)));
  t.cond = linear(pooled, pool_proj_weight_, pool_proj_bias_).reshape({rows, D});
  // text_proj_for_ca: Linear, tanh GELU, Linear.
  t.memory = linear(at::gelu(linear(t.normed, ca_proj1_weight_, ca_proj1_bias_), "tanh"), ca_proj2_weight_,
                    ca_proj2_bias_);
  // shared_ada_lin(cond_BD) in float32, added to each block's ada_gss.
  const at::Tensor silu_cond = at::silu(t.cond);
  const at::Tensor shared = at::linear(silu_cond, shared_ada_weight_, shared_ada_bias_).view({rows, 1, 6, C});
  const int64_t H = config_.num_heads, hd = config_.head_dim();
  for (const Block& b : blocks_) {
    auto parts = (b.ada_gss + shared).unbind(2);
    t.blocks.push_back({parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]});
    const at::Tensor kv = linear(t.memory, b.ca_kv_weight, b.ca_kv_bias).view({n, 2, H, hd});
    t.block_text_kv.emplace_back(round_to_bf16(kv.select(1, 0)).contiguous(),
                                 round_to_bf16(kv.select(1, 1)).contiguous());
  }
  auto head = at::linear(silu_cond, head_ada_weight_, head_ada_bias_).view({rows, 1, 2, C}).unbind(2);
  t.head_scale = head[0];
  t.head_shift = head[1];
  return t;
}

RopeTable InfinityTransformer::rope_table(const ScaleTemplate& scale_template,
                                          const std::vector<Grid>& schedule) const {
  // precompute_rope2d_freqs_grid: half = hd / 2, inv_freq = 1 / 10000^(arange(0, half, 2) / half)
  // (hd / 4 frequencies), a 128 x 128 grid of angles (rows, then columns), cos and sin in float32.
  const int64_t half = config_.head_dim() / 2, grid = 128;
  const at::Tensor inv_freq =
      1.0 / at::pow(10000.0, at::arange(0, half, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                                 static_cast<double>(half));
  const at::Tensor t = at::arange(grid, at::TensorOptions().dtype(at::kLong)).to(at::kFloat);
  const at::Tensor freqs = at::outer(t, inv_freq);  // [128, hd/4]
  const int64_t quarter = inv_freq.size(0);
  const at::Tensor angles = at::cat({freqs.view({grid, 1, quarter}).expand({grid, grid, quarter}),
                                     freqs.view({1, grid, quarter}).expand({grid, grid, quarter})},
                                    -1);  // [128, 128, hd/2]
  const at::Tensor cos_grid = at::cos(angles), sin_grid = at::sin(angles);
  std::vector<int64_t> rows, cols;
  rope_grid_positions(scale_template, schedule, rows, cols);
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] >= grid || cols[i] >= grid)
      throw InvalidArgumentError("Infinity's RoPE grid has 128 x 128 positions; the schedule reaches (" +
                                 std::to_string(rows[i]) + ", " + std::to_string(cols[i]) + ")");
  const at::Tensor r = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
  const at::Tensor c = at::tensor(cols, at::TensorOptions().dtype(at::kLong));
  const at::Tensor flat = r * grid + c;
  RopeTable table;
  table.cos = cos_grid.reshape({grid * grid, half}).index_select(0, flat).to(device_).contiguous();
  table.sin = sin_grid.reshape({grid * grid, half}).index_select(0, flat).to(device_).contiguous();
  return table;
}

at::Tensor InfinityTransformer::first_scale_input(const InfinityText& text) const {
  return text.cond.unsqueeze(1) + pos_start_;
}

at::Tensor InfinityTransformer::scale_input(const at::Tensor& codes) const {
  if (codes.dim() != 3 || codes.size(2) != config_.token_bits())
    throw InvalidArgumentError("Infinity scale input must be [B, tokens, " + std::to_string(config_.token_bits()) +
                               "], got " + c10::str(codes.sizes()));
  return linear(codes.to(device_, at::kFloat), word_embed_weight_, word_embed_bias_);
}

KvStore InfinityTransformer::make_cache(int64_t rows, int64_t capacity) const {
  return KvStore(config_.depth, rows, config_.num_heads, config_.head_dim(), capacity,
                 at::TensorOptions().dtype(dtype_).device(device_));
}

std::array<at::Tensor, 3> InfinityTransformer::self_qkv(const Block& block, const at::Tensor& x, const RopeTable& rope,
                                                        int64_t rope_begin) const {
  const int64_t rows = x.size(0), t = x.size(1), h = config_.num_heads, d = config_.head_dim();
  auto parts = linear(x, block.qkv_weight, block.qkv_bias).view({rows, t, 3, h, d}).permute({2, 0, 3, 1, 4}).unbind(0);
  // Cosine attention: q and k L2-normalised, q scaled per head; then the 2-D RoPE.
  const at::Tensor cos = rope.cos.narrow(0, rope_begin, t), sin = rope.sin.narrow(0, rope_begin, t);
  at::Tensor q = rotate(l2_normalize(parts[0]) * block.query_scale, cos, sin);
  at::Tensor k = rotate(l2_normalize(parts[1]), cos, sin);
  return {q, k, parts[2].contiguous()};
}

at::Tensor InfinityTransformer::cross_attention(int64_t index, const at::Tensor& x, const InfinityText& text,
                                                const ScaleObserver* observer) const {
  const Block& b = blocks_[static_cast<size_t>(index)];
  const int64_t rows = x.size(0), t = x.size(1), h = config_.num_heads, d = config_.head_dim();
  const at::Tensor normed = at::layer_norm(x, {config_.embed_dim}, b.ca_norm_weight, b.ca_norm_bias, config_.norm_eps);
  const at::Tensor q = linear(normed, b.ca_q_weight, b.ca_q_bias).view({rows, t, h, d});
  const auto& [k, v] = text.block_text_kv[static_cast<size_t>(index)];
  const bool wants_mass = observer && observer->on_text_attention;
  at::Tensor mass;
  const at::Tensor out = varlen_cross_attention(q, k, v, text.offsets, 1.0 / std::sqrt(static_cast<double>(d)),
                                                wants_mass ? &mass : nullptr);
  if (wants_mass) observer->on_text_attention(index, mass);
  return linear(out, b.ca_proj_weight, b.ca_proj_bias);
}

template <typename Attend>
at::Tensor InfinityTransformer::block_forward(int64_t index, const at::Tensor& x, const InfinityText& text,
                                              const Attend& attend, const ScaleObserver* observer) const {
  const Block& b = blocks_[static_cast<size_t>(index)];
  const auto& [gamma1, gamma2, scale1, scale2, shift1, shift2] = text.blocks[static_cast<size_t>(index)];
  at::Tensor h = x + attend(index, ada_norm(x, scale1, shift1)) * gamma1;
  h = h + cross_attention(index, h, text, observer);
  const at::Tensor f = linear(at::gelu(linear(ada_norm(h, scale2, shift2), b.fc1_weight, b.fc1_bias), "tanh"),
                              b.fc2_weight, b.fc2_bias);
  return h + f * gamma2;
}

at::Tensor InfinityTransformer::logits(const at::Tensor& h, const InfinityText& text) const {
  // get_logits: AdaLNBeforeHead then the head, in float32.
  return at::linear(ada_norm(h, text.head_scale, text.head_shift), head_weight_, head_bias_);
}

at::Tensor InfinityTransformer::forward_scale(const at::Tensor& x_in, const InfinityText& text, const RopeTable& rope,
                                              const std::vector<int64_t>& offsets, int64_t si, KvStore& cache,
                                              const ScaleObserver& observer,
                                              std::vector<at::Tensor>* block_outputs) const {
  const int64_t scales = static_cast<int64_t>(offsets.size()) - 1;
  if (si < 0 || si >= scales || si >= config_.level_embeddings)
    throw InvalidArgumentError("scale " + std::to_string(si) + " does not exist in this schedule (" +
                               std::to_string(scales) + " scales, at most " + std::to_string(config_.level_embeddings) +
                               ")");
  const int64_t rows = x_in.size(0), t = x_in.size(1), begin = offsets[static_cast<size_t>(si)];
  if (t != offsets[static_cast<size_t>(si) + 1] - begin || rows != text.rows() || rows != cache.rows())
    throw InvalidArgumentError("scale " + std::to_string(si) + ": input " + c10::str(x_in.sizes()) +
                               " does not fit the scale, the text rows or the cache rows");
  std::vector<int64_t> positions(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) positions[static_cast<size_t>(i)] = begin + i;
  // SDPA with scale 1 on the scaled cosine queries; the store divides scores by sqrt(head_dim).
  const double query_factor = std::sqrt(static_cast<double>(config_.head_dim()));
  auto attend = [&](int64_t index, const at::Tensor& xn) {
    const Block& blk = blocks_[static_cast<size_t>(index)];
    auto [q, k, v] = self_qkv(blk, xn, rope, begin);
    cache.append(index, k.to(dtype_), v.to(dtype_), positions);
    if (observer.on_keys) observer.on_keys(index, k);
    const at::Tensor scaled_q = (q * query_factor).to(dtype_);
    if (observer.on_queries) observer.on_queries(index, scaled_q);
    if (observer.before_attention) observer.before_attention(index, cache);
    KvAttention a = cache.attend(index, scaled_q, positions, /*causal=*/false, observer.want_probs,
                                 observer.want_key_mass);
    if (observer.on_attention) observer.on_attention(index, a, cache);
    return linear(a.out.transpose(1, 2).reshape({rows, t, config_.embed_dim}), blk.proj_weight, blk.proj_bias);
  };
  // The level embedding, once, before the first block.
  at::Tensor x = x_in.to(device_, at::kFloat) + lvl_embed_[si];
  for (int64_t i = 0; i < config_.depth; ++i) {
    if (observer.before_layer) observer.before_layer(i);
    x = block_forward(i, x, text, attend, &observer);
    if (block_outputs) block_outputs->push_back(x);
    if (observer.after_layer) observer.after_layer(i, cache);
  }
  return logits(x, text);
}

at::Tensor InfinityTransformer::forward_teacher(const InfinityText& text, const at::Tensor& x_wo_prefix,
                                                const RopeTable& rope, const std::vector<int64_t>& offsets) const {
  const int64_t L = offsets.back(), b = x_wo_prefix.size(0), C = config_.embed_dim;
  if (x_wo_prefix.dim() != 3 || x_wo_prefix.size(1) != L - 1 || x_wo_prefix.size(2) != config_.token_bits())
    throw InvalidArgumentError("teacher forcing input must be [B, " + std::to_string(L - 1) + ", " +
                               std::to_string(config_.token_bits()) + "], got " + c10::str(x_wo_prefix.sizes()));
  if (text.rows() != b) throw InvalidArgumentError("teacher forcing: texts and inputs have different batch sizes");
  at::Tensor x = at::cat({first_scale_input(text), scale_input(x_wo_prefix)}, 1);
  // The level embedding of every token's scale, before the first block.
  std::vector<int64_t> levels;
  for (size_t si = 0; si + 1 < offsets.size(); ++si)
    levels.insert(levels.end(), static_cast<size_t>(offsets[si + 1] - offsets[si]), static_cast<int64_t>(si));
  const at::Tensor lvl = at::tensor(levels, at::TensorOptions().dtype(at::kLong)).to(device_);
  x = x + at::embedding(lvl_embed_, lvl).unsqueeze(0);
  const at::Tensor mask = at::zeros({L, L}, at::TensorOptions().dtype(at::kFloat))
                              .masked_fill(lvl.view({L, 1}).cpu() < lvl.view({1, L}).cpu(),
                                           -std::numeric_limits<float>::infinity())
                              .to(device_);
  auto attend = [&](int64_t index, const at::Tensor& xn) {
    const Block& blk = blocks_[static_cast<size_t>(index)];
    auto [q, k, v] = self_qkv(blk, xn, rope, 0);
    const at::Tensor out = at::scaled_dot_product_attention(q, k, v.to(at::kFloat), mask, 0.0, false, 1.0);
    return linear(out.transpose(1, 2).reshape({b, L, C}), blk.proj_weight, blk.proj_bias);
  };
  for (int64_t i = 0; i < config_.depth; ++i) x = block_forward(i, x, text, attend);
  return logits(x, text);
}

}  // namespace kvs::infinity
