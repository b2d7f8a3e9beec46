#include "engine/models/blocks/vq_weights.h"

#include "engine/io/expected_tensor_builders.h"

namespace kvs::vq {

using io::add_conv;
using io::add_norm;
using io::add_resnet;

std::vector<io::ExpectedTensor> vq_decoder_expected_tensors(const VqConfig& c) {
  std::vector<io::ExpectedTensor> out;
  out.push_back({"quantize.embedding.weight", {c.codebook_size, c.codebook_embed_dim}});
  add_conv(out, "post_quant_conv", c.codebook_embed_dim, c.z_channels, 1);
  const int64_t levels = static_cast<int64_t>(c.decoder_ch_mult.size());
  int64_t block_in = c.ch * c.decoder_ch_mult[levels - 1];
  add_conv(out, "decoder.conv_in", c.z_channels, block_in, 3);
  add_resnet(out, "decoder.mid.0", block_in, block_in);
  io::add_attn_separate_qkv(out, "decoder.mid.1", block_in);
  add_resnet(out, "decoder.mid.2", block_in, block_in);
  // Upstream builds conv_blocks in reversed level order: block j is level L-1-j;
  // attention only at the lowest resolution (j = 0), upsampling after all but the last.
  for (int64_t j = 0; j < levels; ++j) {
    const int64_t level = levels - 1 - j;
    const int64_t block_out = c.ch * c.decoder_ch_mult[level];
    const std::string p = "decoder.conv_blocks." + std::to_string(j);
    for (int64_t i = 0; i <= c.num_res_blocks; ++i) {
      add_resnet(out, p + ".res." + std::to_string(i), block_in, block_out);
      block_in = block_out;
      if (j == 0) io::add_attn_separate_qkv(out, p + ".attn." + std::to_string(i), block_in);
    }
    if (j != levels - 1) add_conv(out, p + ".upsample.conv", block_in, block_in, 3);
  }
  add_norm(out, "decoder.norm_out", block_in);
  add_conv(out, "decoder.conv_out", block_in, c.out_channels, 3);
  return out;
}

std::vector<io::ExpectedTensor> vq_encoder_expected_tensors(const VqConfig& c, const std::vector<int64_t>& ch_mult) {
  std::vector<io::ExpectedTensor> out;
  const int64_t levels = static_cast<int64_t>(ch_mult.size());
  int64_t block_in = c.ch;
  add_conv(out, "encoder.conv_in", 3, block_in, 3);
  // Upstream: attention after every res block of the last (lowest-resolution) level,
  // a stride-2 downsampling conv after all but the last level.
  for (int64_t level = 0; level < levels; ++level) {
    const int64_t block_out = c.ch * ch_mult[level];
    const std::string p = "encoder.conv_blocks." + std::to_string(level);
    for (int64_t i = 0; i < c.num_res_blocks; ++i) {
      add_resnet(out, p + ".res." + std::to_string(i), block_in, block_out);
      block_in = block_out;
      if (level == levels - 1) io::add_attn_separate_qkv(out, p + ".attn." + std::to_string(i), block_in);
    }
    if (level != levels - 1) add_conv(out, p + ".downsample.conv", block_in, block_in, 3);
  }
  add_resnet(out, "encoder.mid.0", block_in, block_in);
  io::add_attn_separate_qkv(out, "encoder.mid.1", block_in);
  add_resnet(out, "encoder.mid.2", block_in, block_in);
  add_norm(out, "encoder.norm_out", block_in);
  add_conv(out, "encoder.conv_out", block_in, c.z_channels, 3);
  add_conv(out, "quant_conv", c.z_channels, c.codebook_embed_dim, 1);
  return out;
}

bool is_vq_encoder_key(const std::string& name) {
  return name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0;
}

bool is_unused_vq_key(const std::string& name) { return is_vq_encoder_key(name) || name == "quantize.codebook_used"; }

}  // namespace kvs::vq
