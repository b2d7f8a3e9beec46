#pragma once
// MAR's encoder–decoder (LTH14/mar models/mar.py forward_mae_encoder /
// forward_mae_decoder over timm v0.9.12 vision_transformer.Block), ported to match
// the official code numerically.
//
// The encoder sees the buffer (buffer_size positions, all set to the class
// embedding) and the known tokens only; the decoder sees every position (mask
// tokens where the token is unknown). Attention is bidirectional over the whole
// sequence, so nothing is cached from step to step on the default path.
//
// Feature caches (LazyMAR) need to act inside the stacks. Each timm Block is
// therefore also exposed in the three pieces a cache splits it into —
//   block_qkv (norm1 + qkv of the tokens to compute),
//   block_attend (those tokens' queries against any keys/values, + residual),
//   block_mlp (norm2 + MLP + residual) —
// and the stacks' entry/exit parts are separate calls, so a cache can run the
// blocks itself on a subset of tokens, reusing cached K/V and features for the
// rest. MarBlockObserver sees the full computation per layer (before/after each
// block and each block's q/k/v: LazyMAR's similarity criterion is the layer-3
// value features).
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

using TensorMap = std::map<std::string, at::Tensor>;

enum class MarStack { Encoder, Decoder };

struct MarBlockQkv {
  at::Tensor q, k, v;  // [rows, heads, tokens, head_dim]
};

// Called on the full computation (forward_encoder / forward_decoder). Any member may be empty.
struct MarBlockObserver {
  // x [rows, tokens, dim]: the block's input (encoder: buffer + known tokens;
  // decoder: buffer + all seq_len positions).
  std::function<void(MarStack stack, int64_t layer, const at::Tensor& x)> before_block;
  std::function<void(MarStack stack, int64_t layer, const MarBlockQkv& qkv)> on_qkv;
  std::function<void(MarStack stack, int64_t layer, const at::Tensor& x)> after_block;
};

class MarTransformer {
 public:
  // `weights`: MAR state_dict names without prefix (the diffusion head's are
  // ignored here), already shape-checked.
  // `dtype`: what the weights and activations are kept in (the run-time dtype);
  // LayerNorm statistics run in float32, attention is the fused SDPA (which
  // accumulates in float32 for bf16/f16).
  MarTransformer(MarConfig config, const TensorMap& weights, at::Device device, at::ScalarType dtype = at::kFloat);

  const MarConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  // The weights' scalar type as loaded (what the constructor was asked for).
  at::ScalarType dtype() const { return z_proj_w_.scalar_type(); }
  int64_t depth(MarStack stack) const;
  int64_t num_heads(MarStack stack) const;

  // class_emb(labels) [B, E]; fake_latent repeated [rows, E] (the unconditional branch).
  at::Tensor class_embedding(const at::Tensor& labels) const;
  at::Tensor fake_latent(int64_t rows) const;

  // forward_mae_encoder(tokens, mask, class_embedding) in eval mode: tokens
  // [B, seq_len, token_embed_dim], mask [B, seq_len] (1 = unknown, the same count
  // in every row), class_embedding [B, E] -> [B, buffer + known, E].
  at::Tensor forward_encoder(const at::Tensor& tokens, const at::Tensor& mask, const at::Tensor& class_embedding,
                             const MarBlockObserver* observer = nullptr) const;
  // forward_mae_decoder(x, mask) -> z [B, seq_len, D] (the diffusion head's condition).
  at::Tensor forward_decoder(const at::Tensor& encoded, const at::Tensor& mask,
                             const MarBlockObserver* observer = nullptr) const;

  // --- the pieces of the two stacks ---
  // Encoder entry: z_proj, buffer := class embedding, + position embedding,
  // z_proj_ln, drop the unknown positions -> [B, buffer + known, E].
  at::Tensor encoder_input(const at::Tensor& tokens, const at::Tensor& mask, const at::Tensor& class_embedding) const;
  at::Tensor encoder_output(const at::Tensor& x) const;  // encoder_norm
  // Decoder entry: decoder_embed, scatter into mask tokens, + position embedding -> [B, buffer + seq_len, D].
  at::Tensor decoder_input(const at::Tensor& encoded, const at::Tensor& mask) const;
  // Decoder exit: decoder_norm, drop the buffer, + diffusion position embedding -> [B, seq_len, D].
  at::Tensor decoder_output(const at::Tensor& x) const;
  // [B, buffer + seq_len] bool: the positions the encoder keeps (buffer + known tokens).
  at::Tensor encoder_keep_mask(const at::Tensor& mask) const;

  // One timm Block, whole or in pieces (x [rows, tokens, dim]).
  at::Tensor block_forward(MarStack stack, int64_t layer, const at::Tensor& x,
                           const MarBlockObserver* observer = nullptr) const;
  MarBlockQkv block_qkv(MarStack stack, int64_t layer, const at::Tensor& x) const;
  // x + proj(softmax(q k^T / sqrt(head_dim)) v): q for x's tokens, k/v for any token set.
  at::Tensor block_attend(MarStack stack, int64_t layer, const at::Tensor& x, const at::Tensor& q, const at::Tensor& k,
                          const at::Tensor& v) const;
  at::Tensor block_mlp(MarStack stack, int64_t layer, const at::Tensor& x) const;  // x + fc2(gelu(fc1(norm2(x))))

 private:
  struct Block {
    at::Tensor norm1_w, norm1_b, qkv_w, qkv_b, proj_w, proj_b, norm2_w, norm2_b, fc1_w, fc1_b, fc2_w, fc2_b;
  };
  const Block& block(MarStack stack, int64_t layer) const;
  at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const;

  MarConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor class_emb_, fake_latent_, z_proj_w_, z_proj_b_, z_proj_ln_w_, z_proj_ln_b_, encoder_pos_;
  at::Tensor encoder_norm_w_, encoder_norm_b_, decoder_embed_w_, decoder_embed_b_, mask_token_, decoder_pos_;
  at::Tensor decoder_norm_w_, decoder_norm_b_, diffusion_pos_;
  std::vector<Block> encoder_blocks_, decoder_blocks_;
};

}  // namespace kvs::mar
