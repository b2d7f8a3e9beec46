#pragma once
// Lumina-mGPT's language model: the vendored Chameleon decoder
// (lumina_mgpt/model/chameleon/modeling_chameleon.py, transformers 4.43.3
// semantics), ported to match it numerically:
//   - qk-norm before RoPE: a LayerNorm over head_dim without affine (eps 1e-5,
//     not rms_norm_eps), then the [model_parallel_size, head_dim] weight and bias,
//     head h using row h / (heads / model_parallel_size);
//   - RoPE in the `rotate_half` layout, 1-D positions, cos/sin in float32;
//   - GQA: query head h reads KV head h / (heads / kv_heads);
//   - RMSNorm statistics in float32, SwiGLU MLP, no biases; swin_norm (34B)
//     moves the norms after attention and MLP;
//   - logits = lm_head(norm(h)) in float32;
//   - no context limit: the official loop runs past max_position_embeddings.
// Rows may sit at different RoPE positions from the cache's positions: the CFG
// branch of Lumina-mGPT is a separate sequence that starts at position 0, while
// the cache files its entries under the conditional sequence's positions so that
// a policy's decision means the same tokens in both (rope_offsets below). Keys
// are cached after RoPE, so evicting a token is a plain gather.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/generation/step_observer.h"
#include "engine/models/lumina/lumina_config.h"

namespace kvs::lumina {

using TensorMap = std::map<std::string, at::Tensor>;

class ChameleonLanguageModel {
 public:
  // `weights`: the HF names (model.*, lm_head.weight), shape-checked by the
  // caller; kept in `dtype` on `device`.
  ChameleonLanguageModel(ChameleonConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype);

  const ChameleonConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // embed_tokens(ids [B, T]) -> [B, T, hidden] in the model's dtype.
  at::Tensor embed(const at::Tensor& ids) const;

  // Runs the decoder layers on h [B, T, hidden] at cache positions
  // first_position..first_position+T-1 and returns the hidden states after the
  // final norm, [B, T, hidden]. Row r takes RoPE positions shifted down by
  // rope_offsets[r] (empty: none). With a cache every layer appends the T new
  // keys/values and attends over what it retains; without one, plain causal
  // attention over h (teacher forcing).
  at::Tensor forward(const at::Tensor& h, int64_t first_position, KvStore* cache, const StepObserver& observer = {},
                     const std::vector<int64_t>& rope_offsets = {}) const;

  // lm_head(hidden [..., hidden]) -> float32 logits [..., vocab].
  at::Tensor logits(const at::Tensor& hidden) const;

  // A cache for `rows` sequences holding up to `capacity` positions.
  KvStore make_cache(int64_t rows, int64_t capacity) const;

 private:
  struct Layer {
    at::Tensor q, k, v, o, gate, up, down, input_norm, post_norm;
    at::Tensor q_norm_w, q_norm_b, k_norm_w, k_norm_b;  // expanded per head: [heads, head_dim]
  };

  at::Tensor attention(int64_t index, const Layer& layer, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, KvStore* cache, const std::vector<int64_t>& positions,
                       const StepObserver& observer) const;

  ChameleonConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor embed_tokens_, norm_, lm_head_;
  at::Tensor inv_freq_;  // [head_dim / 2] float32, on the device
  std::vector<Layer> layers_;
};

}  // namespace kvs::lumina
