#pragma once
// The BSQ-VAE decoder of Infinity (infinity/models/bsq_vae/flux_vqgan.py
// Decoder as vae.py's vae_model builds it: 2-D convolutions, no attention block,
// no pixel-shuffle upsampling): conv_in; mid = two ResnetBlocks; for levels
// L-1 .. 0, num_res_blocks + 1 ResnetBlocks and, on levels 1 .. log2(patch),
// a nearest x2 upsampling with a 3x3 conv; GroupNorm, swish, conv_out. GroupNorm
// has 32 groups, or 24 where the width is not a multiple of 32 (eps 1e-6).
// decode() clamps to [-1, 1] as AutoEncoder.decode does.
#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kvs::infinity {

struct BsqVaeConfig {
  int64_t codebook_dim = 32;  // d: the latent's channels
  int64_t patch_size = 16;    // pixels per latent position
  int64_t base_ch = 128;
  std::vector<int64_t> ch_mult{1, 2, 4, 4, 4};
  int64_t num_res_blocks = 2;
  bool spatial_patchify = false;  // the transformer's tokens carry 2 x 2 latent positions

  int64_t upsamplings() const;  // log2(patch_size)
  void validate() const;
  nlohmann::json to_json() const;
  static BsqVaeConfig from_json(const nlohmann::json& j);  // missing fields keep the defaults
};

// Infinity-2B's (vae_type 32) and Infinity-8B's (vae_type 14, patchified) decoders.
BsqVaeConfig infinity_2b_vae_config();
BsqVaeConfig infinity_8b_vae_config();

class BsqDecoder {
 public:
  // `weights`: the AutoEncoder state-dict keys under "decoder." in the official
  // form (conv and norm wrapped: "decoder.conv_in.conv.weight",
  // "decoder.mid.block_1.norm1.norm.weight") or the plain form vae.py's loader
  // also maps ("decoder.conv_in.weight"); other keys are ignored.
  BsqDecoder(BsqVaeConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
             at::ScalarType dtype = at::kFloat);

  // Every decoder tensor in the official (wrapped) form, with its shape.
  static std::vector<std::pair<std::string, std::vector<int64_t>>> weight_names(const BsqVaeConfig& config);

  const BsqVaeConfig& config() const { return config_; }
  // z [B, d, H, W] -> the decoder's output [B, 3, H * patch, W * patch] float32.
  at::Tensor decode_raw(const at::Tensor& z) const;
  at::Tensor decode(const at::Tensor& z) const;  // clamped to [-1, 1]

 private:
  at::Tensor conv(const at::Tensor& x, const std::string& name, int64_t padding) const;
  at::Tensor norm(const at::Tensor& x, const std::string& name) const;
  at::Tensor resnet(const at::Tensor& x, const std::string& name) const;

  BsqVaeConfig config_;
  at::ScalarType dtype_;
  std::map<std::string, at::Tensor> w_;  // plain names: "decoder.conv_in.weight"
};

}  // namespace kvs::infinity
