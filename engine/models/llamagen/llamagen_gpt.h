#pragma once
// LlamaGen's class-conditional GPT (autoregressive/models/gpt.py Transformer),
// ported to match the official code numerically. Two ways to run it:
//   - forward_teacher: the training-style forward over a whole sequence (causal
//     attention, no cache) — what conformance compares logits against;
//   - prefill + decode_step: incremental decoding through a KvStore whose
//     attention reads only the valid entries (upstream attends over a padded
//     cache with a mask; the results are the same).
// Keys are cached after RoPE (as upstream), so evicting a token later is a
// plain gather and queries keep their true (row, col) positions.
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/generation/step_observer.h"
#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::llamagen {

using TensorMap = std::map<std::string, at::Tensor>;

class LlamaGenGpt {
 public:
  // `weights`: gpt.py state_dict names without prefix, already shape-checked.
  // `dtype`: what the weights, the activations and the KV cache are kept in (the
  // run-time dtype); RMSNorm statistics, RoPE, the attention softmax and the
  // returned logits stay float32 whatever it is, as in upstream's bf16/fp16 runs.
  LlamaGenGpt(GptConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype = at::kFloat);

  const GptConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  // The weights' scalar type as loaded (what the constructor was asked for).
  at::ScalarType dtype() const { return output_.scalar_type(); }

  // How forward_teacher computes causal attention. Explicit keeps upstream's
  // operation order (what conformance compares); Fused calls
  // at::scaled_dot_product_attention — the same function with different rounding,
  // and a much cheaper forward + backward (the training tool uses it).
  enum class TeacherAttention { Explicit, Fused };

  // labels [B]; tokens [B, S] image tokens (S <= block_size - 1 for a full teacher
  // pass). Returns logits [B, cls_token_num + S, vocab] (float32). Differentiable
  // when the weights handed to the constructor require grad (they are kept, not copied,
  // when already float32, contiguous and on `device`).
  at::Tensor forward_teacher(const at::Tensor& labels, const at::Tensor& tokens,
                             TeacherAttention attention = TeacherAttention::Explicit) const;

  // A cache for `rows` sequences holding up to `capacity` positions, in dtype().
  KvStore make_cache(int64_t rows, int64_t capacity) const;

  // Runs the condition tokens (labels [rows], the null class for unconditional
  // rows) at positions 0..cls_token_num-1; returns the last position's logits [rows, vocab].
  at::Tensor prefill(const at::Tensor& labels, KvStore& cache) const;

  // One image token per row (tokens [rows]) at sequence position `position`
  // (cls_token_num + raster index); returns logits [rows, vocab].
  at::Tensor decode_step(const at::Tensor& tokens, int64_t position, KvStore& cache,
                         const StepObserver& observer = {}) const;

  // A layer's pieces, as every forward runs them: decode_step is image_embeddings,
  // then per layer layer_qkv, attention through the store and layer_output, then
  // logits. DecodeGraphs (decode_graphs.h) captures the pieces between two
  // attentions as CUDA graphs: the same operations, so the same numbers.
  struct Qkv {
    at::Tensor q;     // [B, n_head, T, head_dim], after RoPE
    at::Tensor k, v;  // [B, kv_heads, T, head_dim], k after RoPE
  };
  // tok_embeddings of image tokens [B, T] (int64 on the device): [B, T, dim].
  at::Tensor image_embeddings(const at::Tensor& tokens) const;
  // The RoPE table's rows of positions first..first+count-1: [count, head_dim/2, 2] float32.
  at::Tensor rope_rows(int64_t first, int64_t count) const;
  // Attention norm, QKV projection and RoPE of layer `layer` on hidden states h [B, T, dim].
  Qkv layer_qkv(int64_t layer, const at::Tensor& h, const at::Tensor& rope) const;
  // The rest of the layer: h + wo(attention [B, n_head, T, head_dim]), then the
  // feed-forward residual. Returns the next hidden states [B, T, dim].
  at::Tensor layer_output(int64_t layer, const at::Tensor& h, const at::Tensor& attention) const;
  // Attention of the T new tokens through the store: the observer sees the
  // queries, K and V are appended at `positions`, the retained entries are
  // attended (causal by position) and the observer sees the attention.
  // Returns [B, n_head, T, head_dim].
  at::Tensor attend_cached(int64_t layer, const Qkv& qkv, KvStore& cache, const std::vector<int64_t>& positions,
                           const StepObserver& observer) const;
  // Final norm and output head: float32 logits [B, T, vocab].
  at::Tensor logits(const at::Tensor& h) const;

 private:
  struct Layer {
    at::Tensor wqkv, wo, w1, w2, w3, attention_norm, ffn_norm;
  };

  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight) const;
  at::Tensor feed_forward(const Layer& layer, const at::Tensor& x) const;
  // Attention output [B, n_head, T, head_dim] of the T queries; positions: their
  // sequence positions. Through the store when `cache` is given, else causal
  // over the T tokens themselves (teacher forcing).
  at::Tensor attend(int64_t layer_index, const Qkv& qkv, KvStore* cache, const std::vector<int64_t>& positions,
                    const StepObserver& observer, TeacherAttention teacher = TeacherAttention::Explicit) const;
  at::Tensor run_layers(at::Tensor h, int64_t first_position, KvStore* cache, const StepObserver& observer = {},
                        TeacherAttention teacher = TeacherAttention::Explicit) const;

  GptConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor tok_embeddings_, cls_embedding_, norm_, output_;
  std::vector<Layer> layers_;
  at::Tensor rope_;  // [cls + grid^2, head_dim/2, 2], float32 (apply_rope rotates in float32)
};

}  // namespace kvs::llamagen
