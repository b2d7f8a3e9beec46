#include "engine/models/var/var_weights.h"

#include "engine/io/expected_tensor_builders.h"

namespace kvs::var {

using io::add_conv;
using io::add_linear;
using io::add_norm;
using io::add_resnet;

namespace {

// basic_vae.py AttnBlock: one fused 1x1 qkv convolution.
void add_attn(std::vector<io::ExpectedTensor>& out, const std::string& p, int64_t ch) {
  add_norm(out, p + ".norm", ch);
  add_conv(out, p + ".qkv", ch, 3 * ch, 1);
  add_conv(out, p + ".proj_out", ch, ch, 1);
}

}  // namespace

std::vector<io::ExpectedTensor> var_expected_tensors(const VarConfig& c) {
  const int64_t C = c.embed_dim, hidden = c.mlp_hidden();
  std::vector<io::ExpectedTensor> out = {
      {"pos_start", {1, c.first_l(), C}},
      {"pos_1LC", {1, c.total_tokens(), C}},
  };
  add_linear(out, "word_embed", c.cvae, C);
  out.push_back({"class_emb.weight", {c.num_classes + 1, C}});
  out.push_back({"lvl_embed.weight", {c.scales(), C}});
  if (c.shared_aln) add_linear(out, "shared_ada_lin.1", C, 6 * C);
  for (int64_t i = 0; i < c.depth; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    if (c.shared_aln) out.push_back({p + "ada_gss", {1, 1, 6, C}});
    if (c.attn_l2_norm) out.push_back({p + "attn.scale_mul_1H11", {1, c.num_heads, 1, 1}});
    out.push_back({p + "attn.q_bias", {C}});
    out.push_back({p + "attn.v_bias", {C}});
    out.push_back({p + "attn.mat_qkv.weight", {3 * C, C}});
    add_linear(out, p + "attn.proj", C, C);
    add_linear(out, p + "ffn.fc1", C, hidden);
    add_linear(out, p + "ffn.fc2", hidden, C);
    if (!c.shared_aln) add_linear(out, p + "ada_lin.1", C, 6 * C);
  }
  add_linear(out, "head_nm.ada_lin.1", C, 2 * C);
  add_linear(out, "head", C, c.vocab_size);
  return out;
}

std::vector<io::ExpectedTensor> var_buffer_tensors(const VarConfig& c) {
  const int64_t L = c.total_tokens();
  std::vector<io::ExpectedTensor> out = {{"lvl_1L", {1, L}}, {"attn_bias_for_masking", {1, 1, L, L}}};
  for (int64_t i = 0; i < c.depth; ++i)
    out.push_back({"blocks." + std::to_string(i) + ".attn.zero_k_bias", {c.embed_dim}});
  return out;
}

std::string phi_key(const VqvaeConfig& c, int64_t index) {
  if (c.share_quant_resi == 0) return "quantize.quant_resi." + std::to_string(index);  // PhiNonShared (a ModuleList)
  if (c.share_quant_resi == 1) return "quantize.quant_resi.qresi";                     // PhiShared
  return "quantize.quant_resi.qresi_ls." + std::to_string(index);                      // PhiPartiallyShared
}

std::vector<io::ExpectedTensor> vqvae_expected_tensors(const VqvaeConfig& c) {
  std::vector<io::ExpectedTensor> out;
  out.push_back({"quantize.embedding.weight", {c.vocab_size, c.z_channels}});
  for (int64_t i = 0; i < c.phi_count(); ++i) add_conv(out, phi_key(c, i), c.z_channels, c.z_channels, 3);
  add_conv(out, "post_quant_conv", c.z_channels, c.z_channels, c.quant_conv_ks);
  const int64_t levels = static_cast<int64_t>(c.ch_mult.size());
  int64_t block_in = c.ch * c.ch_mult[levels - 1];
  add_conv(out, "decoder.conv_in", c.z_channels, block_in, 3);
  add_resnet(out, "decoder.mid.block_1", block_in, block_in);
  if (c.using_mid_sa) add_attn(out, "decoder.mid.attn_1", block_in);
  add_resnet(out, "decoder.mid.block_2", block_in, block_in);
  // Upstream builds `up` in reversed level order and prepends, so up[i] is level i;
  // self-attention after every block of the lowest resolution, upsampling above level 0.
  for (int64_t level = levels - 1; level >= 0; --level) {
    const int64_t block_out = c.ch * c.ch_mult[level];
    const std::string p = "decoder.up." + std::to_string(level);
    for (int64_t i = 0; i <= c.num_res_blocks; ++i) {
      add_resnet(out, p + ".block." + std::to_string(i), block_in, block_out);
      block_in = block_out;
      if (level == levels - 1 && c.using_sa) add_attn(out, p + ".attn." + std::to_string(i), block_in);
    }
    if (level != 0) add_conv(out, p + ".upsample.conv", block_in, block_in, 3);
  }
  add_norm(out, "decoder.norm_out", block_in);
  add_conv(out, "decoder.conv_out", block_in, c.in_channels, 3);
  return out;
}

std::vector<io::ExpectedTensor> vqvae_encoder_expected_tensors(const VqvaeConfig& c) {
  std::vector<io::ExpectedTensor> out;
  const int64_t levels = static_cast<int64_t>(c.ch_mult.size());
  add_conv(out, "encoder.conv_in", c.in_channels, c.ch, 3);
  int64_t block_in = c.ch;
  // down[i]: num_res_blocks ResnetBlocks (in_ch_mult = (1,) + ch_mult), self-attention
  // after each block of the lowest resolution, a stride-2 conv below every level but the last.
  for (int64_t level = 0; level < levels; ++level) {
    const int64_t block_out = c.ch * c.ch_mult[level];
    const std::string p = "encoder.down." + std::to_string(level);
    for (int64_t i = 0; i < c.num_res_blocks; ++i) {
      add_resnet(out, p + ".block." + std::to_string(i), block_in, block_out);
      block_in = block_out;
      if (level == levels - 1 && c.using_sa) add_attn(out, p + ".attn." + std::to_string(i), block_in);
    }
    if (level != levels - 1) add_conv(out, p + ".downsample.conv", block_in, block_in, 3);
  }
  add_resnet(out, "encoder.mid.block_1", block_in, block_in);
  if (c.using_mid_sa) add_attn(out, "encoder.mid.attn_1", block_in);
  add_resnet(out, "encoder.mid.block_2", block_in, block_in);
  add_norm(out, "encoder.norm_out", block_in);
  add_conv(out, "encoder.conv_out", block_in, c.z_channels, 3);  // double_z=False
  add_conv(out, "quant_conv", c.z_channels, c.z_channels, c.quant_conv_ks);
  return out;
}

std::vector<io::ExpectedTensor> vqvae_buffer_tensors(const VqvaeConfig& c) {
  return {{"quantize.ema_vocab_hit_SV", {static_cast<int64_t>(c.v_patch_nums.size()), c.vocab_size}}};
}

bool is_unused_vqvae_key(const std::string& name) {
  return name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0;
}

std::vector<io::ExpectedTensor> prefixed_with_present_buffers(const io::ShapeMap& have, const std::string& prefix,
                                                              const std::vector<io::ExpectedTensor>& expected,
                                                              const std::vector<io::ExpectedTensor>& buffers) {
  std::vector<io::ExpectedTensor> out;
  for (const auto& e : expected) out.push_back({prefix + e.name, e.shape});
  for (const auto& e : buffers)
    if (have.count(prefix + e.name)) out.push_back({prefix + e.name, e.shape});
  return out;
}

}  // namespace kvs::var
