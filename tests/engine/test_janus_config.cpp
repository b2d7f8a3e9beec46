// Janus-Pro's config.json as Hugging Face publishes it. The official loader
// (janus/models/modeling_vlm.py, MultiModalityConfig) builds
// LlamaConfig(**language_config), so every language-model field a file leaves
// out takes transformers' LlamaConfig default. deepseek-ai/Janus-Pro-1B's file
// names all of its sizes; deepseek-ai/Janus-Pro-7B's names only the layer count,
// the context and the vocabulary, and relies on the defaults for the rest
// (hidden 4096, intermediate 11008, 32 heads). The two texts below have the keys
// and values of the published files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/models/janus/janus_config.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

// deepseek-ai/Janus-Pro-1B, config.json.
const char* kJanusPro1bConfig = R"({
  "aligner_config": {
    "cls": "MlpProjector",
    "model_type": "aligner",
    "params": {"depth": 2, "input_dim": 1024, "n_embed": 2048, "projector_type": "mlp_gelu"}
  },
  "architectures": ["MultiModalityCausalLM"],
  "gen_aligner_config": {
    "cls": "MlpProjector",
    "model_type": "gen_aligner",
    "params": {"depth": 2, "input_dim": 8, "n_embed": 2048, "projector_type": "mlp_gelu"}
  },
  "gen_head_config": {
    "cls": "vision_head",
    "model_type": "gen_head",
    "params": {"image_token_embed": 2048, "image_token_size": 16384, "n_embed": 2048}
  },
  "gen_vision_config": {
    "cls": "VQ-16",
    "model_type": "gen_vision",
    "params": {"image_token_size": 16384, "n_embed": 8}
  },
  "language_config": {
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "max_position_embeddings": 16384,
    "model_type": "llama",
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "torch_dtype": "bfloat16",
    "vocab_size": 102400
  },
  "model_type": "multi_modality",
  "torch_dtype": "bfloat16",
  "transformers_version": "4.33.1",
  "vision_config": {
    "cls": "CLIPVisionTower",
    "model_type": "vision",
    "params": {"image_size": 384, "model_name": "siglip_large_patch16_384", "select_feature": "same",
               "select_layer": -1}
  }
})";

// deepseek-ai/Janus-Pro-7B, config.json: language_config without the sizes.
const char* kJanusPro7bConfig = R"({
  "aligner_config": {
    "cls": "MlpProjector",
    "model_type": "aligner",
    "params": {"depth": 2, "input_dim": 1024, "n_embed": 4096, "projector_type": "mlp_gelu"}
  },
  "gen_aligner_config": {
    "cls": "MlpProjector",
    "model_type": "gen_aligner",
    "params": {"depth": 2, "input_dim": 8, "n_embed": 4096, "projector_type": "mlp_gelu"}
  },
  "gen_head_config": {
    "cls": "vision_head",
    "model_type": "gen_head",
    "params": {"image_token_embed": 4096, "image_token_size": 16384, "n_embed": 4096}
  },
  "gen_vision_config": {
    "cls": "VQ-16",
    "model_type": "gen_vision",
    "params": {"image_token_size": 16384, "n_embed": 8}
  },
  "language_config": {
    "max_position_embeddings": 16384,
    "model_type": "llama",
    "num_hidden_layers": 30,
    "torch_dtype": "bfloat16",
    "vocab_size": 102400
  },
  "model_type": "multi_modality",
  "torch_dtype": "bfloat16",
  "transformers_version": "4.33.1",
  "vision_config": {
    "cls": "CLIPVisionTower",
    "model_type": "vision",
    "params": {"image_size": 384, "model_name": "siglip_large_patch16_384", "select_feature": "same",
               "select_layer": -1}
  }
})";

struct Expected {
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim;
};

void expect_resolved(const janus::JanusConfig& c, const Expected& e) {
  const janus::LanguageConfig& l = c.language;
  EXPECT_EQ(l.hidden_size, e.hidden);
  EXPECT_EQ(l.intermediate_size, e.intermediate);
  EXPECT_EQ(l.num_hidden_layers, e.layers);
  EXPECT_EQ(l.num_attention_heads, e.heads);
  EXPECT_EQ(l.num_key_value_heads, e.kv_heads);
  EXPECT_EQ(l.head_dim(), e.head_dim);
  EXPECT_EQ(l.vocab_size, 102400);
  EXPECT_EQ(l.max_position_embeddings, 16384);
  EXPECT_DOUBLE_EQ(l.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(l.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.image_token_size, 16384);
  EXPECT_EQ(c.gen_embed_dim, 8);
  EXPECT_EQ(c.aligner_depth, 2);
  EXPECT_EQ(c.head_embed, e.hidden);
  EXPECT_EQ(c.vq.codebook_size, 16384);
  EXPECT_EQ(c.vq.codebook_embed_dim, 8);
  EXPECT_EQ(c.vq.downsample(), 16);
  EXPECT_EQ(c.image_tokens(), 576);  // 384 px
  EXPECT_NO_THROW(c.validate());
}

}  // namespace

TEST(JanusConfig, TheFieldsConfigJsonLeavesOutTakeTransformersLlamaDefaults) {
  const janus::LanguageConfig d = janus::llama_config_defaults();
  EXPECT_EQ(d.vocab_size, 32000);
  EXPECT_EQ(d.hidden_size, 4096);
  EXPECT_EQ(d.intermediate_size, 11008);
  EXPECT_EQ(d.num_hidden_layers, 32);
  EXPECT_EQ(d.num_attention_heads, 32);
  EXPECT_EQ(d.num_key_value_heads, 32);
  EXPECT_EQ(d.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(d.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(d.rope_theta, 10000.0);
  // A language_config that names nothing is transformers' LlamaConfig().
  nlohmann::json j = nlohmann::json::parse(kJanusPro7bConfig);
  j["language_config"] = nlohmann::json::object();
  j["gen_aligner_config"]["params"].erase("n_embed");
  j["gen_head_config"]["params"].erase("n_embed");
  const janus::LanguageConfig l = janus::janus_config_from_hf(j).language;
  EXPECT_EQ(l.vocab_size, 32000);
  EXPECT_EQ(l.hidden_size, 4096);
  EXPECT_EQ(l.intermediate_size, 11008);
  EXPECT_EQ(l.num_hidden_layers, 32);
  EXPECT_EQ(l.num_attention_heads, 32);
  EXPECT_EQ(l.num_key_value_heads, 32);
  EXPECT_EQ(l.max_position_embeddings, 2048);
  // num_key_value_heads follows the file's head count when only that is named.
  j["language_config"]["num_attention_heads"] = 16;
  j["language_config"]["hidden_size"] = 2048;
  EXPECT_EQ(janus::janus_config_from_hf(j).language.num_key_value_heads, 16);
}

TEST(JanusConfig, PublishedJanusPro1bConfigResolvesToItsSizes) {
  const janus::JanusConfig c = janus::janus_config_from_hf(nlohmann::json::parse(kJanusPro1bConfig));
  expect_resolved(c, {2048, 5632, 24, 16, 16, 128});
  EXPECT_EQ(janus::to_json(c), janus::to_json(janus::janus_preset("janus-pro-1b")));
}

TEST(JanusConfig, PublishedJanusPro7bConfigResolvesToItsSizes) {
  const janus::JanusConfig c = janus::janus_config_from_hf(nlohmann::json::parse(kJanusPro7bConfig));
  expect_resolved(c, {4096, 11008, 30, 32, 32, 128});
  EXPECT_EQ(janus::to_json(c), janus::to_json(janus::janus_preset("janus-pro-7b")));
}

TEST(JanusConfig, NewerTransformersFieldsAreReadOrRefused) {
  nlohmann::json j = nlohmann::json::parse(kJanusPro7bConfig);
  // transformers 5 writes rope_theta inside rope_parameters.
  j["language_config"]["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  EXPECT_DOUBLE_EQ(janus::janus_config_from_hf(j).language.rope_theta, 500000.0);
  j["language_config"]["rope_parameters"]["rope_type"] = "llama3";
  EXPECT_NE(test::error_of([&] { janus::janus_config_from_hf(j); }).find("rope_parameters.rope_type"),
            std::string::npos);
  j["language_config"].erase("rope_parameters");
  // An explicit head_dim must be the one the sizes give (RoPE and the
  // projections are built from hidden_size / num_attention_heads).
  j["language_config"]["head_dim"] = 128;
  EXPECT_NO_THROW(janus::janus_config_from_hf(j));
  j["language_config"]["head_dim"] = 64;
  EXPECT_NE(test::error_of([&] { janus::janus_config_from_hf(j); }).find("head_dim"), std::string::npos);
}
