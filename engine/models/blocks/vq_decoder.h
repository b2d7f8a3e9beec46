#pragma once
// LlamaGen's VQ tokenizer decoder (tokenizer/tokenizer_image/vq_model.py:
// VectorQuantizer.get_codebook_entry + post_quant_conv + Decoder), for VQ-16 and
// VQ-8 and any other level count. Codes -> RGB in roughly [-1, 1]. LlamaGen
// decodes with it, and so does Janus-Pro (its gen_vision_model is this VQ-16).
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "engine/models/blocks/vq_config.h"

namespace kvs::vq {

class VqDecoder {
 public:
  // `weights`: VQModel state_dict names without prefix (decoder parts), shape-checked.
  // `dtype`: what the weights and activations are kept in; GroupNorm statistics
  // and the attention softmax run in float32, and the images come out float32.
  VqDecoder(VqConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
            at::ScalarType dtype = at::kFloat);

  const VqConfig& config() const { return config_; }
  // The weights' scalar type as loaded.
  at::ScalarType dtype() const { return w("decoder.conv_out.weight").scalar_type(); }

  // codes [B, h*w] (any integer dtype) laid out row-major -> images [B, 3, h*f, w*f].
  at::Tensor decode_codes(const at::Tensor& codes, int64_t grid_h, int64_t grid_w) const;

  // VQModel.decode: quantised latents z [B, codebook_embed_dim, h, w] -> images
  // (post_quant_conv + Decoder). Differentiable when the weights require grad: the
  // training tool (engine/training) decodes through this very code.
  at::Tensor decode_latent(const at::Tensor& z) const;

 private:
  const at::Tensor& w(const std::string& name) const;
  at::Tensor conv(const at::Tensor& x, const std::string& prefix, int64_t padding) const;
  at::Tensor group_norm(const at::Tensor& x, const std::string& prefix) const;
  at::Tensor resnet_block(const at::Tensor& x, const std::string& prefix) const;
  at::Tensor attn_block(const at::Tensor& x, const std::string& prefix) const;

  VqConfig config_;
  at::ScalarType dtype_;
  std::map<std::string, at::Tensor> weights_;
  at::Tensor codebook_;  // rows L2-normalised if codebook_l2_norm
};

}  // namespace kvs::vq
