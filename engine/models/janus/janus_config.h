#pragma once
// Architecture of Janus-Pro's text-to-image path (deepseek-ai/Janus,
// janus/models/modeling_vlm.py MultiModalityConfig): the LLaMA language model
// (transformers LlamaConfig), the image-token embedding `gen_embed`, the MLP
// projector `gen_aligner`, the image head `gen_head` and the VQ-16 decoder
// `gen_vision_model` (LlamaGen's VQ architecture). Field names follow the
// official config.json so a converted folder reads the same in both worlds.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/blocks/vq_config.h"

namespace kvs::janus {

// transformers LlamaConfig, the fields generation reads. The defaults here are
// Janus-Pro-1B's sizes; transformers' own defaults are llama_config_defaults().
struct LanguageConfig {
  int64_t hidden_size = 2048;
  int64_t intermediate_size = 5632;
  int64_t num_hidden_layers = 24;
  int64_t num_attention_heads = 16;
  int64_t num_key_value_heads = 16;
  int64_t vocab_size = 102400;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 16384;

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  int64_t parameter_count() const;  // without the text head (lm_head), which generation never uses
};

struct JanusConfig {
  LanguageConfig language;
  int64_t image_token_size = 16384;  // gen_vision_config / gen_head image_token_size: the image vocabulary
  int64_t gen_embed_dim = 8;         // gen_vision_config.n_embed: width of gen_embed
  int64_t aligner_depth = 2;         // gen_aligner_config.depth (mlp_gelu)
  int64_t head_embed = 2048;         // gen_head_config.image_token_embed
  vq::VqConfig vq;                   // gen_vision_model: VQ-16
  int64_t image_size = 384;          // generation_inference.py img_size
  // Text conventions of the checkpoint's tokenizer that generation relies on.
  std::string image_start_tag = "<begin_of_image>";
  std::string pad_tag = "<｜▁pad▁｜>";

  int64_t grid_size() const { return image_size / vq.downsample(); }
  int64_t image_tokens() const { return grid_size() * grid_size(); }
  int64_t parameter_count() const;  // language model + gen_embed + gen_aligner + gen_head
  // Throws InvalidArgumentError naming the offending field.
  void validate() const;
};

// Official sizes: "janus-pro-1b" (hidden 2048 x 24 layers) and "janus-pro-7b"
// (hidden 4096 x 30 layers), 384 px, VQ-16 with 16384 codes.
JanusConfig janus_preset(const std::string& name);
std::vector<std::string> janus_preset_names();

// transformers' LlamaConfig defaults (models/llama/configuration_llama.py), which
// the official loader gives every language_config field config.json leaves out:
// vocab 32000, hidden 4096, intermediate 11008, 32 layers, 32 heads, key/value
// heads = heads, 2048 positions, rms_norm_eps 1e-6, rope_theta 10000.
LanguageConfig llama_config_defaults();

// The official config.json (MultiModalityConfig as Hugging Face stores it) ->
// config; language_config fields it leaves out take llama_config_defaults(), as
// in the official loader (Janus-Pro-7B's names only its layer count, context and
// vocabulary). Refuses a config whose generation parts are not the Janus-Pro ones
// (FormatError naming the field). The decoder is VQ-16 and the image 384 px,
// which config.json does not record: the caller settles both, then validates.
JanusConfig janus_config_from_hf(const nlohmann::json& config_json);

// Bundle model.json section ("architecture": {"janus": ...}); unknown keys are
// refused with their names.
JanusConfig janus_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const JanusConfig& c);

}  // namespace kvs::janus
