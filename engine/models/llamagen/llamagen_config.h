#pragma once
// Architecture configuration of LlamaGen's class-conditional GPT
// (autoregressive/models/gpt.py ModelArgs); its VQ tokenizer's is
// engine/models/blocks/vq_config.h (Janus-Pro decodes with the same one).
// Field names follow upstream so configs read the same in both worlds.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/models/blocks/vq_config.h"

namespace kvs::llamagen {

// LlamaGen's tokenizer is the shared VQ block; its names read as LlamaGen's here.
using vq::to_json;
using vq::vq_config_from_json;
using vq::vq_preset;
using vq::VqConfig;

struct GptConfig {
  int64_t dim = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  std::optional<int64_t> n_kv_head;  // grouped-query attention; unset = n_head
  int64_t multiple_of = 256;
  std::optional<double> ffn_dim_multiplier;
  double rope_base = 10000.0;
  double norm_eps = 1e-5;
  int64_t num_classes = 1000;
  double class_dropout_prob = 0.1;  // > 0 adds the null-class row used by CFG
  int64_t vocab_size = 16384;
  int64_t cls_token_num = 1;
  int64_t block_size = 256;  // image tokens = grid_size^2

  int64_t head_dim() const { return dim / n_head; }
  int64_t kv_heads() const { return n_kv_head.value_or(n_head); }
  int64_t ffn_hidden_dim() const;  // find_multiple(int(2*4*dim/3) [* multiplier], multiple_of)
  int64_t grid_size() const;       // sqrt(block_size)
  int64_t label_rows() const { return num_classes + (class_dropout_prob > 0 ? 1 : 0); }
  int64_t null_class() const { return num_classes; }
  bool has_null_class() const { return class_dropout_prob > 0; }
  int64_t parameter_count() const;

  // Throws InvalidArgumentError naming the offending field.
  void validate() const;
};

// Official sizes (gpt.py GPT_models): "GPT-B", "GPT-L", "GPT-XL", "GPT-XXL",
// "GPT-XXXL", "GPT-1B", "GPT-3B" (head_dim 100), "GPT-7B".
GptConfig gpt_preset(const std::string& name, int64_t image_size = 256, int64_t downsample = 16,
                     int64_t num_classes = 1000, int64_t vocab_size = 16384);
std::vector<std::string> gpt_preset_names();

// JSON in upstream ModelArgs spelling (unknown keys are rejected with their names).
GptConfig gpt_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const GptConfig& c);

}  // namespace kvs::llamagen
