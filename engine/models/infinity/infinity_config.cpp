#include "engine/models/infinity/infinity_config.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/core/errors.h"

namespace kvs::infinity {

int64_t InfinityConfig::mlp_hidden() const {
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(embed_dim) * mlp_ratio / 256.0)) * 256;
}

int64_t InfinityConfig::pool_heads() const {
  const int64_t pool_head_dim = embed_dim > 4096 ? 64 : 128;
  return text_channels / pool_head_dim;
}

std::string InfinityConfig::block_prefix(int64_t index) const {
  if (block_chunks <= 1) return "blocks." + std::to_string(index) + ".";
  const int64_t per_chunk = blocks_per_chunk();
  return "block_chunks." + std::to_string(index / per_chunk) + ".module." + std::to_string(index % per_chunk) + ".";
}

void InfinityConfig::validate() const {
  auto fail = [](const std::string& what) { throw InvalidArgumentError("Infinity config: " + what); };
  if (depth <= 0 || embed_dim <= 0 || num_heads <= 0) fail("depth, embed_dim and num_heads must be positive");
  if (embed_dim % num_heads != 0) fail("embed_dim must be a multiple of num_heads");
  if (head_dim() % 4 != 0) fail("head_dim (embed_dim / num_heads) must be a multiple of 4 for the 2-D RoPE");
  if (block_chunks <= 0 || depth % block_chunks != 0) fail("depth must be a multiple of block_chunks");
  if (!(mlp_ratio > 0.0) || mlp_hidden() <= 0)
    fail("mlp_ratio gives an FFN of no width (round(embed_dim * mlp_ratio / 256) * 256 is 0)");
  if (text_channels <= 0 || text_maxlen <= 0) fail("text_channels and text_maxlen must be positive");
  if (pool_heads() <= 0)
    fail("text_channels must be at least the text pool's head width (128, or 64 above embed_dim 4096)");
  if (embed_dim % pool_heads() != 0) fail("embed_dim must be a multiple of the text pool's heads");
  if (codebook_dim <= 0) fail("codebook_dim must be positive");
  if (level_embeddings <= 0) fail("level_embeddings must be positive");
  if (!(norm_eps > 0.0)) fail("norm_eps must be positive");
}

nlohmann::json InfinityConfig::to_json() const {
  return {{"depth", depth},
          {"embed_dim", embed_dim},
          {"num_heads", num_heads},
          {"mlp_ratio", mlp_ratio},
          {"block_chunks", block_chunks},
          {"text_channels", text_channels},
          {"text_maxlen", text_maxlen},
          {"codebook_dim", codebook_dim},
          {"apply_spatial_patchify", spatial_patchify},
          {"norm_eps", norm_eps},
          {"level_embeddings", level_embeddings}};
}

InfinityConfig InfinityConfig::from_json(const nlohmann::json& j) {
  InfinityConfig c;
  try {
    c.depth = j.value("depth", c.depth);
    c.embed_dim = j.value("embed_dim", c.embed_dim);
    c.num_heads = j.value("num_heads", c.num_heads);
    c.mlp_ratio = j.value("mlp_ratio", c.mlp_ratio);
    c.block_chunks = j.value("block_chunks", c.block_chunks);
    c.text_channels = j.value("text_channels", c.text_channels);
    c.text_maxlen = j.value("text_maxlen", c.text_maxlen);
    c.codebook_dim = j.value("codebook_dim", c.codebook_dim);
    if (j.contains("apply_spatial_patchify")) {
      const auto& p = j.at("apply_spatial_patchify");
      c.spatial_patchify = p.is_boolean() ? p.get<bool>() : p.get<int64_t>() != 0;
    }
    c.norm_eps = j.value("norm_eps", c.norm_eps);
    c.level_embeddings = j.value("level_embeddings", c.level_embeddings);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("Infinity config: a field has the wrong type (") + e.what() + ")");
  }
  return c;
}

InfinityConfig infinity_2b_config() { return InfinityConfig{}; }

InfinityConfig infinity_8b_config() {
  InfinityConfig c;
  c.depth = 40;
  c.embed_dim = 3584;
  c.num_heads = 28;
  c.codebook_dim = 14;
  c.spatial_patchify = true;
  return c;
}

}  // namespace kvs::infinity
