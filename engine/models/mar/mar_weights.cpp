#include "engine/models/mar/mar_weights.h"

#include "engine/io/expected_tensor_builders.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "engine/core/errors.h"

namespace kvs::mar {

using io::add_conv;
using io::add_linear;
using io::add_norm;
using io::add_resnet;

namespace {

// timm vision_transformer.Block: norm1, attn.qkv (bias), attn.proj, norm2, mlp.fc1, mlp.fc2.
void add_block(std::vector<io::ExpectedTensor>& out, const std::string& p, int64_t dim, int64_t hidden) {
  add_norm(out, p + ".norm1", dim);
  add_linear(out, p + ".attn.qkv", dim, 3 * dim);
  add_linear(out, p + ".attn.proj", dim, dim);
  add_norm(out, p + ".norm2", dim);
  add_linear(out, p + ".mlp.fc1", dim, hidden);
  add_linear(out, p + ".mlp.fc2", hidden, dim);
}

int64_t count(const std::vector<io::ExpectedTensor>& list) {
  int64_t n = 0;
  for (const auto& e : list) {
    int64_t m = 1;
    for (int64_t d : e.shape) m *= d;
    n += m;
  }
  return n;
}

}  // namespace

std::vector<io::ExpectedTensor> mar_expected_tensors(const MarConfig& c) {
  const int64_t E = c.encoder_embed_dim, D = c.decoder_embed_dim, L = c.seq_len(), buf = c.buffer_size;
  std::vector<io::ExpectedTensor> out = {
      {"fake_latent", {1, E}},
      {"encoder_pos_embed_learned", {1, L + buf, E}},
      {"mask_token", {1, 1, D}},
      {"decoder_pos_embed_learned", {1, L + buf, D}},
      {"diffusion_pos_embed_learned", {1, L, D}},
      {"class_emb.weight", {c.class_num, E}},
  };
  add_linear(out, "z_proj", c.token_embed_dim(), E);
  add_norm(out, "z_proj_ln", E);
  for (int64_t i = 0; i < c.encoder_depth; ++i)
    add_block(out, "encoder_blocks." + std::to_string(i), E, c.encoder_mlp_hidden());
  add_norm(out, "encoder_norm", E);
  add_linear(out, "decoder_embed", E, D);
  for (int64_t i = 0; i < c.decoder_depth; ++i)
    add_block(out, "decoder_blocks." + std::to_string(i), D, c.decoder_mlp_hidden());
  add_norm(out, "decoder_norm", D);
  // models/diffloss.py SimpleMLPAdaLN (frequency_embedding_size 256).
  const std::string h = "diffloss.net.";
  const int64_t W = c.diffloss_w;
  add_linear(out, h + "time_embed.mlp.0", 256, W);
  add_linear(out, h + "time_embed.mlp.2", W, W);
  add_linear(out, h + "cond_embed", D, W);
  add_linear(out, h + "input_proj", c.token_embed_dim(), W);
  for (int64_t i = 0; i < c.diffloss_d; ++i) {
    const std::string p = h + "res_blocks." + std::to_string(i);
    add_norm(out, p + ".in_ln", W);
    add_linear(out, p + ".mlp.0", W, W);
    add_linear(out, p + ".mlp.2", W, W);
    add_linear(out, p + ".adaLN_modulation.1", W, 3 * W);
  }
  add_linear(out, h + "final_layer.linear", W, c.head_out_channels());
  add_linear(out, h + "final_layer.adaLN_modulation.1", W, 2 * W);
  return out;
}

std::vector<io::ExpectedTensor> kl_vae_expected_tensors(const KlVaeConfig& c) {
  std::vector<io::ExpectedTensor> out;
  add_conv(out, "post_quant_conv", c.embed_dim, c.embed_dim, 1);
  io::add_taming_decoder(out, "decoder.", c.embed_dim, c.ch, c.ch_mult, c.num_res_blocks, c.attn_resolutions,
                         c.resolution, c.out_ch);
  return out;
}

bool is_unused_vae_key(const std::string& name) {
  for (const char* prefix : {"encoder.", "quant_conv.", "loss."})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

int64_t mar_parameter_count(const MarConfig& config) { return count(mar_expected_tensors(config)); }

int64_t kl_vae_decoder_parameter_count(const KlVaeConfig& config) { return count(kl_vae_expected_tensors(config)); }

KlVaeConfig infer_kl_vae_config(const io::ShapeMap& shapes, const std::string& origin) {
  auto shape = [&](const std::string& name) -> const std::vector<int64_t>& {
    auto it = shapes.find(name);
    if (it == shapes.end()) throw ModelMismatchError(origin + ": missing tensors: " + name);
    return it->second;
  };
  KlVaeConfig c;
  c.embed_dim = shape("post_quant_conv.weight").at(0);
  const int64_t levels = io::count_indexed(shapes, "decoder.up.", "block.0.conv1.weight");
  if (levels == 0) throw ModelMismatchError(origin + ": no decoder.up.N tensors (not a KL-VAE decoder?)");
  c.num_res_blocks = io::count_indexed(shapes, "decoder.up.0.block.", "conv1.weight") - 1;
  c.ch = shape("decoder.up.0.block.0.conv2.weight").at(0);
  c.ch_mult.assign(static_cast<size_t>(levels), 1);
  c.attn_resolutions.clear();
  for (int64_t level = 0; level < levels; ++level) {
    const std::string p = "decoder.up." + std::to_string(level);
    c.ch_mult[static_cast<size_t>(level)] = shape(p + ".block.0.conv2.weight").at(0) / c.ch;
    // Level l works at resolution >> l (the lowest level at resolution >> (levels - 1)).
    if (shapes.count(p + ".attn.0.q.weight")) c.attn_resolutions.push_back(c.resolution >> level);
  }
  std::reverse(c.attn_resolutions.begin(), c.attn_resolutions.end());
  c.out_ch = shape("decoder.conv_out.weight").at(0);
  c.validate();
  return c;
}

std::vector<io::ExpectedTensor> with_prefix(const std::string& prefix,
                                            const std::vector<io::ExpectedTensor>& expected) {
  std::vector<io::ExpectedTensor> out;
  out.reserve(expected.size());
  for (const auto& e : expected) out.push_back({prefix + e.name, e.shape});
  return out;
}

}  // namespace kvs::mar
