#pragma once
// Infinity's transformer (infinity/models/infinity.py Infinity with basic.py's
// CrossAttnBlock, SelfAttention, CrossAttention, FFN and AdaLNBeforeHead),
// ported to match the official code numerically:
//   - the prompt side once per run (encode_text): text_norm, the attention
//     pool that makes cond_BD (the start token and the AdaLN condition), the
//     cross-attention memory and every block's text keys and values (constant
//     over the run; the official code re-projects them at every scale);
//   - forward_scale: one whole scale through a KvStore, as autoregressive_infer_cfg
//     does with its growing self-attention cache. Keys are cached after the
//     cosine normalisation and the 2-D RoPE, at their flattened multi-scale
//     positions; a scale's queries attend every retained entry (earlier scales
//     and the scale itself). The text cross-attention is not a cache: it never
//     grows and no policy touches it;
//   - forward_teacher: Infinity.forward over all scales at once under the
//     block-causal mask (what the teacher-forcing check compares).
// Numerics: the residual stream, the LayerNorms, the AdaLN arithmetic, the RoPE
// and the logits are float32 as upstream's (its autocast leaves them so); the
// cross-attention runs as flash-attention does from float32 inputs: queries,
// keys and values rounded to bf16, the softmax in float32, the result rounded
// to bf16 (basic.py CrossAttention.forward), which the conformance reference
// does too. Linear layers run in the run-time dtype.
#include <ATen/core/Tensor.h>

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/generation/scale_observer.h"
#include "engine/models/infinity/infinity_config.h"
#include "engine/models/infinity/scale_schedules.h"

namespace kvs::infinity {

using TensorMap = std::map<std::string, at::Tensor>;

// The prompt side of a run, rows first (cond rows, then the unconditional ones with CFG).
struct InfinityText {
  at::Tensor cond;  // cond_BD [rows, D] float32 (the start token too)
  std::vector<std::array<at::Tensor, 6>>
      blocks;                         // per block gamma1, gamma2, scale1, scale2, shift1, shift2 [rows, 1, C]
  at::Tensor head_scale, head_shift;  // [rows, 1, C]
  std::vector<int64_t> offsets;       // cu_seqlens_k: row b's text is memory rows offsets[b]..offsets[b+1]
  std::vector<std::pair<at::Tensor, at::Tensor>> block_text_kv;  // per block (k, v) [N, H, hd], bf16-rounded float32
  // Debug views for conformance: text_norm's output and the cross-attention memory [N, D].
  at::Tensor normed, memory;
  int64_t rows() const { return cond.size(0); }
};

// The 2-D RoPE of one schedule: cos and sin [L, head_dim / 2] (float32), token t's row.
struct RopeTable {
  at::Tensor cos, sin;
};

class InfinityTransformer {
 public:
  // `weights`: Infinity state_dict names without prefix (block_chunks form as
  // config.block_prefix gives), already checked against weight_shapes.
  InfinityTransformer(InfinityConfig config, const TensorMap& weights, at::Device device,
                      at::ScalarType dtype = at::kFloat);

  // Every tensor the transformer reads, with its shape (the official names).
  static std::vector<std::pair<std::string, std::vector<int64_t>>> weight_shapes(const InfinityConfig& config);

  const InfinityConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // cfg_uncond[:length] [length, Ct5] (float32): the learned unconditional text of a prompt of that length.
  at::Tensor unconditional_text(int64_t length) const;
  // The prompt side from the rows' T5 outputs concatenated [N, Ct5] and each row's length.
  InfinityText encode_text(const at::Tensor& text_rows, const std::vector<int64_t>& lengths) const;

  RopeTable rope_table(const ScaleTemplate& scale_template, const std::vector<Grid>& schedule) const;

  // Scale 0's input: sos + pos_start [rows, 1, C] (float32).
  at::Tensor first_scale_input(const InfinityText& text) const;
  // A later scale's input from its codes [B, tokens, token_bits] (float32): word_embed.
  at::Tensor scale_input(const at::Tensor& codes) const;

  KvStore make_cache(int64_t rows, int64_t capacity) const;
  // Runs scale si (x [rows, tokens, C]) through every block via the cache; the
  // level embedding is added first. Returns the logits [rows, tokens,
  // 2 * token_bits] (float32, before tau and CFG). `block_outputs`, when given,
  // receives every block's output.
  at::Tensor forward_scale(const at::Tensor& x, const InfinityText& text, const RopeTable& rope,
                           const std::vector<int64_t>& offsets, int64_t si, KvStore& cache,
                           const ScaleObserver& observer = {}, std::vector<at::Tensor>* block_outputs = nullptr) const;

  // Infinity.forward: x_wo_prefix [B, L - 1, token_bits] (the inputs of scales 1..) -> logits [B, L, 2 * token_bits].
  at::Tensor forward_teacher(const InfinityText& text, const at::Tensor& x_wo_prefix, const RopeTable& rope,
                             const std::vector<int64_t>& offsets) const;

 private:
  struct Block {
    at::Tensor ada_gss;               // [1, 1, 6, C]
    at::Tensor qkv_weight, qkv_bias;  // qkv_bias = cat(q_bias, zero_k_bias, v_bias)
    at::Tensor query_scale;           // [1, H, 1, 1]: exp(min(scale_mul_1H11, ln 100))
    at::Tensor proj_weight, proj_bias;
    at::Tensor ca_q_weight, ca_q_bias, ca_kv_weight, ca_kv_bias, ca_proj_weight, ca_proj_bias;
    at::Tensor ca_norm_weight, ca_norm_bias;
    at::Tensor fc1_weight, fc1_bias, fc2_weight, fc2_bias;
  };

  at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) const;
  at::Tensor ada_norm(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift) const;
  // q, k (after the cosine normalisation and the RoPE of `rope_rows`), v [rows, H, T, hd].
  std::array<at::Tensor, 3> self_qkv(const Block& block, const at::Tensor& x, const RopeTable& rope,
                                     int64_t rope_begin) const;
  // `observer`: its on_text_attention, when set, gets row 0's mass per text token.
  at::Tensor cross_attention(int64_t index, const at::Tensor& x, const InfinityText& text,
                             const ScaleObserver* observer) const;
  template <typename Attend>
  at::Tensor block_forward(int64_t index, const at::Tensor& x, const InfinityText& text, const Attend& attend,
                           const ScaleObserver* observer = nullptr) const;
  at::Tensor logits(const at::Tensor& h, const InfinityText& text) const;

  InfinityConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor cfg_uncond_, pos_start_, lvl_embed_, text_norm_weight_;
  at::Tensor pool_query_, pool_kv_weight_, pool_kv_bias_, pool_proj_weight_, pool_proj_bias_;
  at::Tensor ca_proj1_weight_, ca_proj1_bias_, ca_proj2_weight_, ca_proj2_bias_;
  at::Tensor word_embed_weight_, word_embed_bias_;
  at::Tensor shared_ada_weight_, shared_ada_bias_, head_ada_weight_, head_ada_bias_, head_weight_, head_bias_;
  std::vector<Block> blocks_;
};

// flash_attn_varlen_kvpacked_func as the official CrossAttention calls it from
// float32: q [rows, Lq, H, hd] against row b's keys and values k, v [N, H, hd]
// (rows offsets[b]..offsets[b+1]), all rounded to bf16, softmax(q k^T * scale) v
// in float32, the result rounded to bf16; returns [rows, Lq, H * hd] float32.
// `row0_mass`, when given, receives row 0's attention mass per key [n] (CPU
// float32): summed over its Lq queries, averaged over the heads.
at::Tensor varlen_cross_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const std::vector<int64_t>& offsets, double scale, at::Tensor* row0_mass = nullptr);

}  // namespace kvs::infinity
