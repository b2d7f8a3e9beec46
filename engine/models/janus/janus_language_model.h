#pragma once
// Janus-Pro's language model: transformers' LlamaModel as the official
// generation loop runs it (generation_inference.py calls
// language_model.model(inputs_embeds=..., past_key_values=...)), ported to
// match it numerically:
//   - 1-D positions: the prompt takes 0..P-1, image token i takes P+i;
//   - RoPE in the `rotate_half` layout (element j pairs with j + head_dim/2;
//     LlamaGen pairs adjacent elements), cos/sin computed in float32;
//   - GQA: query head h reads KV head h / (heads / kv_heads);
//   - RMSNorm statistics in float32, SwiGLU MLP, no biases;
//   - no attention mask: the unconditional CFG row attends its pad tokens.
// The model works on embeddings, not ids, because image tokens enter through
// Janus's own table (gen_embed -> gen_aligner), not embed_tokens. Keys are
// cached after RoPE, so evicting a token is a plain gather.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/generation/step_observer.h"
#include "engine/models/janus/janus_config.h"

namespace kvs::janus {

using TensorMap = std::map<std::string, at::Tensor>;

class JanusLanguageModel {
 public:
  // `weights`: names without "language_model.model.", shape-checked; kept in `dtype`.
  JanusLanguageModel(LanguageConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype);

  const LanguageConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // embed_tokens(ids [B, T]) -> [B, T, hidden] in the model's dtype.
  at::Tensor embed_text(const at::Tensor& ids) const;

  // Runs the decoder layers on embeddings h [B, T, hidden] at positions
  // first_position..first_position+T-1 and returns the last hidden state after
  // the final RMSNorm, [B, T, hidden]. With a cache, every layer appends the T
  // new keys/values and attends over what the store retains; without one,
  // plain causal attention over h (teacher forcing).
  at::Tensor forward(const at::Tensor& h, int64_t first_position, KvStore* cache,
                     const StepObserver& observer = {}) const;

  // A cache for `rows` sequences holding up to `capacity` positions.
  KvStore make_cache(int64_t rows, int64_t capacity) const;

 private:
  struct Layer {
    at::Tensor q, k, v, o, gate, up, down, input_norm, post_norm;
  };

  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight) const;
  at::Tensor attention(int64_t index, const Layer& layer, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, KvStore* cache, const std::vector<int64_t>& positions,
                       const StepObserver& observer) const;

  LanguageConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor embed_tokens_, norm_;
  at::Tensor inv_freq_;  // [head_dim / 2] float32, on the device
  std::vector<Layer> layers_;
};

}  // namespace kvs::janus
