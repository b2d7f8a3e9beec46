#pragma once
// LlamaGen's VQ tokenizer as a trainable model (tokenizer/tokenizer_image/
// vq_model.py VQModel): Encoder -> quant_conv -> VectorQuantizer -> post_quant_conv
// -> Decoder, with the official state-dict names, so that the decoder half is
// exactly what the engine's VqDecoder loads (and runs: decoding goes through
// VqDecoder::decode_latent, the encoder through the shared conv_blocks).
//
// VectorQuantizer as upstream: nearest codebook entry by squared distance, with
// z and the codebook L2-normalised when codebook_l2_norm; losses
//   vq_loss     = mean((z_q - sg(z))^2)
//   commit_loss = beta * mean((sg(z_q) - z)^2)
//   entropy     = ratio * (sample entropy - batch-average entropy) of softmax(-d / 0.01)
// and the straight-through estimator z_q = z + sg(z_q - z).
#include <nlohmann/json_fwd.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/llamagen/llamagen_config.h"
#include "engine/training/parameter_set.h"

namespace kvs::vq {
class VqDecoder;
}

namespace kvs::training {

struct VqModelConfig {
  llamagen::VqConfig arch;               // what bundles store (decoder side + codebook)
  std::vector<int64_t> encoder_ch_mult;  // empty: the decoder's ch_mult (upstream VQ-8/VQ-16 use the same)
  double commit_loss_beta = 0.25;
  double entropy_loss_ratio = 0.0;

  const std::vector<int64_t>& encoder_levels() const {
    return encoder_ch_mult.empty() ? arch.decoder_ch_mult : encoder_ch_mult;
  }
  void validate() const;
};

nlohmann::json to_json(const VqModelConfig& c);
VqModelConfig vq_model_config_from_json(const nlohmann::json& j);

// Every VQModel tensor we train: encoder.*, quant_conv.*, quantize.embedding,
// post_quant_conv.*, decoder.* (no codebook_used buffer).
std::vector<io::ExpectedTensor> vq_model_expected_tensors(const VqModelConfig& c);
// PyTorch's default layer init; codebook U(-1/n, 1/n), L2-normalised when l2_norm (as upstream).
ParameterSet init_vq_parameters(const VqModelConfig& c, uint64_t seed, at::Device device);

struct VqQuantized {
  at::Tensor z_q;                                 // [B, e, h, w], straight-through
  at::Tensor codes;                               // [B, h*w] int64, row-major
  at::Tensor vq_loss, commit_loss, entropy_loss;  // scalars; defined when losses were asked for
};

struct VqOutput {
  at::Tensor reconstruction;  // [B, 3, H, W], roughly [-1, 1]
  VqQuantized quantized;
};

class VqModel {
 public:
  // `weights` as from ParameterSet::as_map() (shared, so updates are seen) or a checkpoint.
  VqModel(VqModelConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device);
  ~VqModel();
  VqModel(VqModel&&) noexcept;

  const VqModelConfig& config() const { return config_; }
  at::Device device() const { return device_; }

  at::Tensor encode(const at::Tensor& images) const;  // Encoder + quant_conv -> [B, e, h, w]
  VqQuantized quantize(const at::Tensor& z, bool with_losses) const;
  at::Tensor decode(const at::Tensor& z_q) const;  // post_quant_conv + Decoder (engine VqDecoder)
  VqOutput forward(const at::Tensor& images, bool with_losses) const;
  at::Tensor encode_codes(const at::Tensor& images) const;  // no autograd: [B, h*w] int64

 private:
  at::Tensor codebook() const;  // [n, e], normalised when l2_norm

  VqModelConfig config_;
  at::Device device_;
  std::map<std::string, at::Tensor> weights_;
  std::unique_ptr<vq::VqDecoder> decoder_;
};

}  // namespace kvs::training
