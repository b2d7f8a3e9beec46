#pragma once
// VAR's next-scale transformer (models/var.py VAR + models/basic_var.py
// AdaLNSelfAttn / SelfAttention / FFN / AdaLNBeforeHead), ported to match the
// official code numerically. Two ways to run it:
//   - forward_teacher: VAR.forward over all L tokens at once with the block-causal
//     mask (a token sees every token of its own and earlier scales) — what
//     conformance compares logits against;
//   - forward_scale: one whole scale per call through a KvStore, as
//     autoregressive_infer_cfg does with its growing KV cache. The scale's K/V are
//     appended at their flattened sequence positions (scale_begin(si) + i) and its
//     queries attend, without a causal mask, to every retained entry: earlier
//     scales and the scale itself, i.e. exactly the block-causal mask.
// The cache holds keys after the L2 normalisation (as upstream's cached_k). The
// store's attention scales scores by 1/sqrt(head_dim); the queries are multiplied
// by attention_scale() * sqrt(head_dim) beforehand (a power of two, hence exact,
// for the official head_dim 64).
#include <ATen/core/Tensor.h>

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/generation/scale_observer.h"
#include "engine/models/var/var_config.h"

namespace kvs::var {

using TensorMap = std::map<std::string, at::Tensor>;

// The class condition of a batch and everything derived from it once: cond_BD
// [rows, C], each block's six AdaLN vectors (gamma1, gamma2, scale1, scale2,
// shift1, shift2; each [rows, 1, C]) and the head's (scale, shift).
struct VarCondition {
  at::Tensor cond;
  std::vector<std::array<at::Tensor, 6>> blocks;
  at::Tensor head_scale, head_shift;
  int64_t rows() const { return cond.size(0); }
};

class VarTransformer {
 public:
  // `weights`: VAR state_dict names without prefix, already shape-checked.
  // `dtype`: what the weights, the activations and the KV cache are kept in (the
  // run-time dtype); LayerNorm statistics, the l2 normalisation of queries and
  // keys, the attention softmax and the returned logits stay float32.
  VarTransformer(VarConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype = at::kFloat);

  const VarConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  // The weights' scalar type as loaded (what the constructor was asked for).
  at::ScalarType dtype() const { return head_weight_.scalar_type(); }

  // labels [rows] (num_classes = the null class) -> the condition.
  VarCondition condition(const at::Tensor& labels) const;

  // VAR.forward(label_B, x_BLCv_wo_first_l) in eval mode (no label dropout):
  // x [B, L - first_l, Cvae] -> logits [B, L, V] (float32).
  at::Tensor forward_teacher(const at::Tensor& labels, const at::Tensor& x_wo_first_l) const;

  // The first scale's tokens: sos + pos_start + level/position embedding [rows, first_l, C].
  at::Tensor first_scale_input(const VarCondition& condition) const;
  // Scale si >= 1's tokens from the area-downsampled f_hat [B, Cvae, pn, pn]:
  // word_embed + level/position embedding, [B, pn*pn, C].
  at::Tensor scale_input(const at::Tensor& fhat_map, int64_t si) const;

  // A cache for `rows` sequences with room for `capacity` entries per segment.
  KvStore make_cache(int64_t rows, int64_t capacity) const;
  // Runs scale si (x [rows, pn*pn, C]) through every block via the cache; returns
  // the logits [rows, pn*pn, V] (float32).
  at::Tensor forward_scale(const at::Tensor& x, const VarCondition& condition, int64_t si, KvStore& cache,
                           const ScaleObserver& observer = {}) const;

 private:
  struct Block {
    at::Tensor qkv_weight, qkv_bias;  // qkv_bias = cat(q_bias, zeros, v_bias)
    at::Tensor query_scale;           // [1, H, 1, 1]: exp(min(scale_mul_1H11, ln 100)) (l2 norm) or undefined
    at::Tensor proj_weight, proj_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias;
    at::Tensor ada_weight, ada_bias;  // per block (not shared_aln)
    at::Tensor ada_gss;               // [1, 1, 6, C] (shared_aln)
  };

  at::Tensor layer_norm(const at::Tensor& x) const;
  // q, k, v [rows, H, T, hd] (q already scaled for L2-norm attention).
  std::array<at::Tensor, 3> qkv(const Block& block, const at::Tensor& x) const;
  at::Tensor block_forward(int64_t index, const at::Tensor& x, const VarCondition& condition,
                           const std::function<at::Tensor(int64_t, const at::Tensor&)>& attend) const;
  at::Tensor logits(const at::Tensor& h, const VarCondition& condition) const;

  VarConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor word_embed_weight_, word_embed_bias_, class_emb_, pos_start_, lvl_pos_;  // lvl_pos_ [1, L, C]
  at::Tensor shared_ada_weight_, shared_ada_bias_;
  at::Tensor head_ada_weight_, head_ada_bias_, head_weight_, head_bias_;
  std::vector<Block> blocks_;
};

}  // namespace kvs::var
