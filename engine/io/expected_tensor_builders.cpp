#include "engine/io/expected_tensor_builders.h"

#include <algorithm>

namespace kvs::io {

void add_linear(std::vector<ExpectedTensor>& out, const std::string& p, int64_t in, int64_t out_features) {
  out.push_back({p + ".weight", {out_features, in}});
  out.push_back({p + ".bias", {out_features}});
}

void add_conv(std::vector<ExpectedTensor>& out, const std::string& p, int64_t in, int64_t out_ch, int64_t k) {
  out.push_back({p + ".weight", {out_ch, in, k, k}});
  out.push_back({p + ".bias", {out_ch}});
}

void add_norm(std::vector<ExpectedTensor>& out, const std::string& p, int64_t ch) {
  out.push_back({p + ".weight", {ch}});
  out.push_back({p + ".bias", {ch}});
}

void add_resnet(std::vector<ExpectedTensor>& out, const std::string& p, int64_t in, int64_t out_ch) {
  add_norm(out, p + ".norm1", in);
  add_conv(out, p + ".conv1", in, out_ch, 3);
  add_norm(out, p + ".norm2", out_ch);
  add_conv(out, p + ".conv2", out_ch, out_ch, 3);
  if (in != out_ch) add_conv(out, p + ".nin_shortcut", in, out_ch, 1);
}

void add_attn_separate_qkv(std::vector<ExpectedTensor>& out, const std::string& p, int64_t ch) {
  add_norm(out, p + ".norm", ch);
  for (const char* part : {".q", ".k", ".v", ".proj_out"}) add_conv(out, p + part, ch, ch, 1);
}

void add_taming_decoder(std::vector<ExpectedTensor>& out, const std::string& prefix, int64_t z_channels, int64_t ch,
                        const std::vector<int64_t>& ch_mult, int64_t num_res_blocks,
                        const std::vector<int64_t>& attn_resolutions, int64_t resolution, int64_t out_ch) {
  const int64_t levels = static_cast<int64_t>(ch_mult.size());
  int64_t block_in = ch * ch_mult[static_cast<size_t>(levels - 1)];
  int64_t curr_res = resolution >> (levels - 1);
  add_conv(out, prefix + "conv_in", z_channels, block_in, 3);
  add_resnet(out, prefix + "mid.block_1", block_in, block_in);
  add_attn_separate_qkv(out, prefix + "mid.attn_1", block_in);
  add_resnet(out, prefix + "mid.block_2", block_in, block_in);
  // Upstream builds `up` from the lowest resolution and prepends, so up[i] is level i.
  for (int64_t level = levels - 1; level >= 0; --level) {
    const int64_t block_out = ch * ch_mult[static_cast<size_t>(level)];
    const std::string p = prefix + "up." + std::to_string(level);
    const bool attn = std::find(attn_resolutions.begin(), attn_resolutions.end(), curr_res) != attn_resolutions.end();
    for (int64_t i = 0; i <= num_res_blocks; ++i) {
      add_resnet(out, p + ".block." + std::to_string(i), block_in, block_out);
      block_in = block_out;
      if (attn) add_attn_separate_qkv(out, p + ".attn." + std::to_string(i), block_in);
    }
    if (level != 0) {
      add_conv(out, p + ".upsample.conv", block_in, block_in, 3);
      curr_res *= 2;
    }
  }
  add_norm(out, prefix + "norm_out", block_in);
  add_conv(out, prefix + "conv_out", block_in, out_ch, 3);
}

}  // namespace kvs::io
