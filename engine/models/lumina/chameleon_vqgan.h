#pragma once
// Chameleon's VQGAN decoder as Lumina-mGPT decodes an image
// (chameleon_vae_ori/image_tokenizer.py pil_from_img_toks -> vqgan.py
// VQModel.decode): the raw codebook rows of the codes (no L2 normalisation,
// unlike LlamaGen's and Janus-Pro's VQ), post_quant_conv, then the taming
// decoder (nearest x2 upsampling, GroupNorm(32, eps 1e-6), no tanh).
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "engine/models/lumina/lumina_config.h"

namespace kvs::lumina {

class ChameleonVqgan {
 public:
  // `weights`: names without "vqgan." (quantize.embedding.weight,
  // post_quant_conv.*, decoder.*); kept in `dtype` on `device`.
  ChameleonVqgan(VqganConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                 at::ScalarType dtype);

  const VqganConfig& config() const { return config_; }

  // codes [B, H, W] (int64, 0..n_embed-1, row-major) -> images [B, 3, H*up, W*up]
  // float32 in about [-1, 1] (before clamping).
  at::Tensor decode_codes(const at::Tensor& codes) const;

 private:
  VqganConfig config_;
  at::Device device_;
  at::ScalarType dtype_;
  std::map<std::string, at::Tensor> weights_;
};

// _pil_from_chw_tensor: ((clamp(x, -1, 1) + 1) / 2 * 255) truncated -> uint8
// [B, H, W, 3].
at::Tensor lumina_images_to_uint8_nhwc(const at::Tensor& images);

}  // namespace kvs::lumina
