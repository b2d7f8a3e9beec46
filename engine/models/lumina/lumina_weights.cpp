#include "engine/models/lumina/lumina_weights.h"

#include "engine/io/expected_tensor_builders.h"

namespace kvs::lumina {

std::vector<io::ExpectedTensor> chameleon_expected_tensors(const ChameleonConfig& c) {
  const int64_t d = c.hidden_size, hd = c.head_dim(), q = c.num_attention_heads * hd, kv = c.num_key_value_heads * hd;
  const int64_t mp = c.model_parallel_size;
  std::vector<io::ExpectedTensor> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, d}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "self_attn.q_proj.weight", {q, d}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, d}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, d}});
    out.push_back({p + "self_attn.o_proj.weight", {d, q}});
    for (const char* norm : {"self_attn.q_norm.", "self_attn.k_norm."}) {
      out.push_back({p + norm + "weight", {mp, hd}});
      out.push_back({p + norm + "bias", {mp, hd}});
    }
    out.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, d}});
    out.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, d}});
    out.push_back({p + "mlp.down_proj.weight", {d, c.intermediate_size}});
    out.push_back({p + "input_layernorm.weight", {d}});
    out.push_back({p + "post_attention_layernorm.weight", {d}});
  }
  out.push_back({"model.norm.weight", {d}});
  out.push_back({"lm_head.weight", {c.vocab_size, d}});
  return out;
}

std::vector<io::ExpectedTensor> vqgan_decoder_expected_tensors(const VqganConfig& c) {
  std::vector<io::ExpectedTensor> out;
  out.push_back({"quantize.embedding.weight", {c.n_embed, c.embed_dim}});
  io::add_conv(out, "post_quant_conv", c.embed_dim, c.z_channels, 1);
  io::add_taming_decoder(out, "decoder.", c.z_channels, c.ch, c.ch_mult, c.num_res_blocks, c.attn_resolutions,
                         c.resolution, c.out_ch);
  return out;
}

std::vector<io::ExpectedTensor> lumina_expected_tensors(const LuminaConfig& config) {
  std::vector<io::ExpectedTensor> out = chameleon_expected_tensors(config.lm);
  for (auto e : vqgan_decoder_expected_tensors(config.vqgan)) out.push_back({"vqgan." + e.name, e.shape});
  return out;
}

bool is_unused_chameleon_key(const std::string& name) { return name.rfind("model.vqmodel.", 0) == 0; }

bool is_unused_vqgan_key(const std::string& name) {
  for (const char* prefix : {"encoder.", "quant_conv.", "loss."})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace kvs::lumina
