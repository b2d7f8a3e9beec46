#include "engine/models/janus/janus_weights.h"

#include "engine/models/blocks/vq_weights.h"

namespace kvs::janus {

std::vector<io::ExpectedTensor> janus_generation_tensors(const JanusConfig& c) {
  const LanguageConfig& l = c.language;
  const int64_t d = l.hidden_size, kv = l.num_key_value_heads * l.head_dim(), ffn = l.intermediate_size;
  std::vector<io::ExpectedTensor> out = {{"language_model.model.embed_tokens.weight", {l.vocab_size, d}}};
  for (int64_t i = 0; i < l.num_hidden_layers; ++i) {
    const std::string p = "language_model.model.layers." + std::to_string(i) + ".";
    out.push_back({p + "self_attn.q_proj.weight", {d, d}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, d}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, d}});
    out.push_back({p + "self_attn.o_proj.weight", {d, d}});
    out.push_back({p + "mlp.gate_proj.weight", {ffn, d}});
    out.push_back({p + "mlp.up_proj.weight", {ffn, d}});
    out.push_back({p + "mlp.down_proj.weight", {d, ffn}});
    out.push_back({p + "input_layernorm.weight", {d}});
    out.push_back({p + "post_attention_layernorm.weight", {d}});
  }
  out.push_back({"language_model.model.norm.weight", {d}});
  out.push_back({"gen_embed.weight", {c.image_token_size, c.gen_embed_dim}});
  // MlpProjector (mlp_gelu): Linear, then (GELU, Linear) depth-1 times, as one
  // nn.Sequential: the linears sit at indices 0, 2, 4, ...
  out.push_back({"gen_aligner.layers.0.weight", {d, c.gen_embed_dim}});
  out.push_back({"gen_aligner.layers.0.bias", {d}});
  for (int64_t i = 1; i < c.aligner_depth; ++i) {
    const std::string p = "gen_aligner.layers." + std::to_string(2 * i) + ".";
    out.push_back({p + "weight", {d, d}});
    out.push_back({p + "bias", {d}});
  }
  out.push_back({"gen_head.output_mlp_projector.weight", {c.head_embed, d}});
  out.push_back({"gen_head.output_mlp_projector.bias", {c.head_embed}});
  out.push_back({"gen_head.vision_head.weight", {c.image_token_size, c.head_embed}});
  out.push_back({"gen_head.vision_head.bias", {c.image_token_size}});
  return out;
}

std::vector<io::ExpectedTensor> janus_expected_tensors(const JanusConfig& c) {
  std::vector<io::ExpectedTensor> out = janus_generation_tensors(c);
  for (auto e : vq::vq_decoder_expected_tensors(c.vq)) out.push_back({"gen_vision_model." + e.name, e.shape});
  return out;
}

bool is_unused_janus_key(const std::string& name) {
  auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("vision_model.") || starts("aligner.") || starts("language_model.lm_head.")) return true;
  const std::string vq = "gen_vision_model.";
  return starts("gen_vision_model.") && vq::is_unused_vq_key(name.substr(vq.size()));
}

}  // namespace kvs::janus
