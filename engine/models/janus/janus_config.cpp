#include "engine/models/janus/janus_config.h"

#include <nlohmann/json.hpp>

#include <set>

#include "engine/core/errors.h"

namespace kvs::janus {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgumentError(message);
}

}  // namespace

int64_t LanguageConfig::parameter_count() const {
  const int64_t d = hidden_size, kv = num_key_value_heads * head_dim();
  const int64_t per_layer = d * d * 2 + d * kv * 2 + 3 * d * intermediate_size + 2 * d;
  return vocab_size * d + num_hidden_layers * per_layer + d;
}

int64_t JanusConfig::parameter_count() const {
  const int64_t d = language.hidden_size;
  const int64_t aligner = gen_embed_dim * d + d + (aligner_depth - 1) * (d * d + d);
  const int64_t head = d * head_embed + head_embed + head_embed * image_token_size + image_token_size;
  return language.parameter_count() + image_token_size * gen_embed_dim + aligner + head;
}

void JanusConfig::validate() const {
  const LanguageConfig& l = language;
  require(l.hidden_size > 0 && l.num_hidden_layers > 0 && l.num_attention_heads > 0 && l.intermediate_size > 0,
          "janus config: hidden_size, num_hidden_layers, num_attention_heads and intermediate_size must be positive");
  require(l.hidden_size % l.num_attention_heads == 0, "janus config: hidden_size " + std::to_string(l.hidden_size) +
                                                          " is not divisible by num_attention_heads " +
                                                          std::to_string(l.num_attention_heads));
  require(l.head_dim() % 2 == 0, "janus config: head_dim must be even (RoPE pairs element j with j + head_dim/2)");
  require(l.num_key_value_heads > 0 && l.num_attention_heads % l.num_key_value_heads == 0,
          "janus config: num_attention_heads " + std::to_string(l.num_attention_heads) +
              " is not a multiple of num_key_value_heads " + std::to_string(l.num_key_value_heads));
  require(l.vocab_size > 0, "janus config: vocab_size must be positive");
  require(l.rope_theta > 0 && l.rms_norm_eps > 0, "janus config: rope_theta and rms_norm_eps must be positive");
  require(image_token_size > 0 && gen_embed_dim > 0 && head_embed > 0,
          "janus config: image_token_size, gen embedding width and head width must be positive");
  require(aligner_depth >= 1, "janus config: gen_aligner depth must be at least 1");
  vq.validate();
  require(vq.codebook_size == image_token_size, "janus config: the VQ codebook (" + std::to_string(vq.codebook_size) +
                                                    " codes) must match the image vocabulary image_token_size " +
                                                    std::to_string(image_token_size));
  require(image_size > 0 && image_size % vq.downsample() == 0,
          "janus config: image_size " + std::to_string(image_size) + " is not a multiple of the VQ downsampling " +
              std::to_string(vq.downsample()));
  require(l.max_position_embeddings > image_tokens(),
          "janus config: max_position_embeddings " + std::to_string(l.max_position_embeddings) +
              " leaves no room for a prompt before " + std::to_string(image_tokens()) + " image tokens");
  require(!image_start_tag.empty() && !pad_tag.empty(), "janus config: image_start_tag and pad_tag must be set");
}

LanguageConfig llama_config_defaults() {
  LanguageConfig c;
  c.vocab_size = 32000;
  c.hidden_size = 4096;
  c.intermediate_size = 11008;
  c.num_hidden_layers = 32;
  c.num_attention_heads = 32;
  c.num_key_value_heads = 32;  // None in transformers: num_attention_heads
  c.max_position_embeddings = 2048;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  return c;
}

JanusConfig janus_preset(const std::string& name) {
  JanusConfig c;
  c.vq = vq::vq_preset("VQ-16", 16384, 8);
  if (name == "janus-pro-1b") {
    c.language.hidden_size = 2048;
    c.language.intermediate_size = 5632;
    c.language.num_hidden_layers = 24;
    c.language.num_attention_heads = 16;
    c.language.num_key_value_heads = 16;
  } else if (name == "janus-pro-7b") {
    c.language.hidden_size = 4096;
    c.language.intermediate_size = 11008;
    c.language.num_hidden_layers = 30;
    c.language.num_attention_heads = 32;
    c.language.num_key_value_heads = 32;
  } else {
    throw InvalidArgumentError("unknown Janus-Pro size '" + name + "' (known: janus-pro-1b, janus-pro-7b)");
  }
  c.head_embed = c.language.hidden_size;
  c.validate();
  return c;
}

std::vector<std::string> janus_preset_names() { return {"janus-pro-1b", "janus-pro-7b"}; }

JanusConfig janus_config_from_hf(const nlohmann::json& j) {
  auto fail = [](const std::string& what) { throw FormatError("config.json: " + what); };
  if (!j.is_object()) fail("not a JSON object");
  JanusConfig c;
  try {
    if (j.contains("model_type") && j.at("model_type") != "multi_modality")
      fail("model_type " + j.at("model_type").dump() + " is not Janus's multi_modality");
    for (const char* section : {"language_config", "gen_vision_config", "gen_aligner_config", "gen_head_config"})
      if (!j.contains(section)) fail(std::string("no ") + section + " (is this a Janus / Janus-Pro checkpoint?)");
    // MultiModalityConfig builds LlamaConfig(**language_config): a field the file
    // leaves out takes transformers' default, and Janus-Pro-7B's file leaves out
    // every size but the layer count.
    const nlohmann::json& l = j.at("language_config");
    const LanguageConfig d = llama_config_defaults();
    LanguageConfig& lc = c.language;
    lc.hidden_size = l.value("hidden_size", d.hidden_size);
    lc.intermediate_size = l.value("intermediate_size", d.intermediate_size);
    lc.num_hidden_layers = l.value("num_hidden_layers", d.num_hidden_layers);
    lc.num_attention_heads = l.value("num_attention_heads", d.num_attention_heads);
    lc.num_key_value_heads = l.value("num_key_value_heads", lc.num_attention_heads);
    lc.vocab_size = l.value("vocab_size", d.vocab_size);
    lc.rope_theta = l.value("rope_theta", d.rope_theta);
    lc.rms_norm_eps = l.value("rms_norm_eps", d.rms_norm_eps);
    lc.max_position_embeddings = l.value("max_position_embeddings", d.max_position_embeddings);
    if (l.contains("rope_parameters") && !l.at("rope_parameters").is_null()) {
      // Newer transformers write RoPE's settings here instead of rope_theta.
      const nlohmann::json& rope = l.at("rope_parameters");
      if (rope.value("rope_type", std::string("default")) != "default")
        fail("language_config.rope_parameters.rope_type " + rope.at("rope_type").dump() +
             " is not plain RoPE; scaled RoPE is not supported");
      lc.rope_theta = rope.value("rope_theta", lc.rope_theta);
    }
    if (l.contains("rope_scaling") && !l.at("rope_scaling").is_null())
      fail("language_config.rope_scaling is set; Janus-Pro uses plain RoPE and scaled RoPE is not supported");
    if (l.contains("head_dim") && !l.at("head_dim").is_null() && lc.num_attention_heads > 0 &&
        l.at("head_dim").get<int64_t>() * lc.num_attention_heads != lc.hidden_size)
      fail("language_config.head_dim " + l.at("head_dim").dump() + " is not hidden_size / num_attention_heads (" +
           std::to_string(lc.hidden_size) + " / " + std::to_string(lc.num_attention_heads) + ")");
    if (l.value("hidden_act", std::string("silu")) != "silu")
      fail("language_config.hidden_act must be silu (LLaMA's SwiGLU)");
    if (l.value("attention_bias", false) || l.value("mlp_bias", false))
      fail("language_config: attention or MLP biases are not part of Janus-Pro's language model");

    const nlohmann::json& gv = j.at("gen_vision_config");
    if (gv.value("cls", std::string("VQ-16")) != "VQ-16")
      fail("gen_vision_config.cls " + gv.at("cls").dump() + " is not VQ-16");
    const nlohmann::json& gvp = gv.value("params", nlohmann::json::object());
    c.image_token_size = gvp.value("image_token_size", c.image_token_size);
    c.gen_embed_dim = gvp.value("n_embed", c.gen_embed_dim);

    const nlohmann::json& ga = j.at("gen_aligner_config");
    const nlohmann::json& gap = ga.value("params", nlohmann::json::object());
    if (gap.value("projector_type", std::string("mlp_gelu")) != "mlp_gelu")
      fail("gen_aligner_config.params.projector_type must be mlp_gelu");
    c.aligner_depth = gap.value("depth", c.aligner_depth);
    if (gap.value("input_dim", c.gen_embed_dim) != c.gen_embed_dim)
      fail("gen_aligner_config.params.input_dim does not match gen_vision_config.params.n_embed");
    if (gap.value("n_embed", lc.hidden_size) != lc.hidden_size)
      fail("gen_aligner_config.params.n_embed does not match language_config.hidden_size");

    const nlohmann::json& gh = j.at("gen_head_config");
    const nlohmann::json& ghp = gh.value("params", nlohmann::json::object());
    c.head_embed = ghp.value("image_token_embed", lc.hidden_size);
    if (ghp.value("n_embed", lc.hidden_size) != lc.hidden_size)
      fail("gen_head_config.params.n_embed does not match language_config.hidden_size");
    if (ghp.value("image_token_size", c.image_token_size) != c.image_token_size)
      fail("gen_head_config.params.image_token_size does not match gen_vision_config.params.image_token_size");
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("wrong value type (") + e.what() + ")");
  }
  // MultiModalityCausalLM builds its decoder with VQ_16(): the LlamaGen VQ-16
  // architecture, with the codebook the config names (the converter checks it
  // against the decoder's tensors).
  c.vq = vq::vq_preset("VQ-16", c.image_token_size, c.gen_embed_dim);
  return c;
}

JanusConfig janus_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "janus config must be a JSON object");
  JanusConfig c;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      LanguageConfig& l = c.language;
      if (k == "hidden_size") l.hidden_size = v.get<int64_t>();
      else if (k == "intermediate_size") l.intermediate_size = v.get<int64_t>();
      else if (k == "num_hidden_layers") l.num_hidden_layers = v.get<int64_t>();
      else if (k == "num_attention_heads") l.num_attention_heads = v.get<int64_t>();
      else if (k == "num_key_value_heads") l.num_key_value_heads = v.get<int64_t>();
      else if (k == "vocab_size") l.vocab_size = v.get<int64_t>();
      else if (k == "rope_theta") l.rope_theta = v.get<double>();
      else if (k == "rms_norm_eps") l.rms_norm_eps = v.get<double>();
      else if (k == "max_position_embeddings") l.max_position_embeddings = v.get<int64_t>();
      else if (k == "image_token_size") c.image_token_size = v.get<int64_t>();
      else if (k == "gen_embed_dim") c.gen_embed_dim = v.get<int64_t>();
      else if (k == "aligner_depth") c.aligner_depth = v.get<int64_t>();
      else if (k == "head_embed") c.head_embed = v.get<int64_t>();
      else if (k == "image_size") c.image_size = v.get<int64_t>();
      else if (k == "image_start_tag") c.image_start_tag = v.get<std::string>();
      else if (k == "pad_tag") c.pad_tag = v.get<std::string>();
      else if (k == "vq") c.vq = vq::vq_config_from_json(v);
      else throw InvalidArgumentError("janus config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("janus config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const JanusConfig& c) {
  const LanguageConfig& l = c.language;
  return {{"hidden_size", l.hidden_size},
          {"intermediate_size", l.intermediate_size},
          {"num_hidden_layers", l.num_hidden_layers},
          {"num_attention_heads", l.num_attention_heads},
          {"num_key_value_heads", l.num_key_value_heads},
          {"vocab_size", l.vocab_size},
          {"rope_theta", l.rope_theta},
          {"rms_norm_eps", l.rms_norm_eps},
          {"max_position_embeddings", l.max_position_embeddings},
          {"image_token_size", c.image_token_size},
          {"gen_embed_dim", c.gen_embed_dim},
          {"aligner_depth", c.aligner_depth},
          {"head_embed", c.head_embed},
          {"image_size", c.image_size},
          {"image_start_tag", c.image_start_tag},
          {"pad_tag", c.pad_tag},
          {"vq", vq::to_json(c.vq)}};
}

}  // namespace kvs::janus
