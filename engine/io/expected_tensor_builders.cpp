#include "engine/io/expected_tensor_builders.h"

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

}  // namespace kvs::io
