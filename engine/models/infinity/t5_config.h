#pragma once
// The T5 encoder's architecture, read from a Hugging Face config.json
// (transformers T5Config; google/flan-t5-xl for Infinity). Only what
// T5EncoderModel reads; a feed-forward it does not implement is refused.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace kvs::infinity {

struct T5Config {
  int64_t vocab_size = 32128;
  int64_t d_model = 2048;
  int64_t d_kv = 64;
  int64_t d_ff = 5120;
  int64_t num_layers = 24;
  int64_t num_heads = 32;
  int64_t relative_attention_num_buckets = 32;
  int64_t relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
  std::string feed_forward_proj = "gated-gelu";  // "gated-gelu" (gelu_new, gated) or "relu"

  bool gated() const { return feed_forward_proj.rfind("gated-", 0) == 0; }
  int64_t inner_dim() const { return num_heads * d_kv; }
  void validate() const;                                  // InvalidArgumentError naming the field
  nlohmann::json to_json() const;                         // config.json's field names
  static T5Config from_hf_json(const nlohmann::json& j);  // missing fields keep transformers' T5Config defaults
};

// google/flan-t5-xl's encoder (its config.json).
T5Config flan_t5_xl_config();

}  // namespace kvs::infinity
