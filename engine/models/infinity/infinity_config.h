#pragma once
// The Infinity transformer's architecture (infinity/models/infinity.py, built
// by tools/run_infinity.py load_infinity with the production switches:
// shared AdaLN, cosine self-attention with 2-D RoPE normalised by the template's
// last scale, the level embedding before the first block only, bit labels,
// cross-attention to the prompt's T5 rows, fused LayerNorm blocks). Field names
// follow run_infinity's model_kwargs and Infinity's arguments, so a converted
// checkpoint's numbers read the same in both worlds. Defaults: Infinity-2B.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace kvs::infinity {

struct InfinityConfig {
  int64_t depth = 32;
  int64_t embed_dim = 2048;  // C (= D, the condition width)
  int64_t num_heads = 16;
  double mlp_ratio = 4.0;
  // The official state dict files block i under block_chunks.{i / per_chunk}.module.{i % per_chunk}.
  int64_t block_chunks = 8;
  int64_t text_channels = 2048;   // Ct5: the T5 encoder's width
  int64_t text_maxlen = 512;      // rows of the learned unconditional text cfg_uncond
  int64_t codebook_dim = 32;      // d: bits per VAE latent position
  bool spatial_patchify = false;  // apply_spatial_patchify: 2x2 latent positions per token (Infinity-8B)
  double norm_eps = 1e-6;
  int64_t level_embeddings = 15;  // lvl_embed rows: at most this many scales

  int64_t head_dim() const { return embed_dim / num_heads; }
  // Bits per transformer token (d_vae in the official code): d, or 4d with patchify.
  int64_t token_bits() const { return spatial_patchify ? 4 * codebook_dim : codebook_dim; }
  int64_t head_outputs() const { return 2 * token_bits(); }  // V: two logits per bit
  // round(C * mlp_ratio / 256) * 256 with Python's round (half to even).
  int64_t mlp_hidden() const;
  // TextAttentivePool: head_dim 128 (64 when D > 4096), Ct5 / that heads of width D / heads.
  int64_t pool_heads() const;
  int64_t blocks_per_chunk() const { return block_chunks > 0 ? depth / block_chunks : depth; }
  // The state-dict prefix of block i ("block_chunks.c.module.j." or "blocks.i." with one chunk).
  std::string block_prefix(int64_t index) const;

  // InvalidArgumentError naming the field for anything the port cannot run.
  void validate() const;
  nlohmann::json to_json() const;
  static InfinityConfig from_json(const nlohmann::json& j);  // missing fields keep the defaults above
};

// run_infinity.py's model sizes (315-330).
InfinityConfig infinity_2b_config();
InfinityConfig infinity_8b_config();

}  // namespace kvs::infinity
