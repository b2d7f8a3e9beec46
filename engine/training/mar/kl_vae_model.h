#pragma once
// MAR's KL VAE as a trainable model (LTH14/mar models/vae.py AutoencoderKL):
// Encoder -> quant_conv -> DiagonalGaussianDistribution -> post_quant_conv ->
// Decoder, under the official state-dict names. Everything after the posterior
// is the engine's own inference code (mar::KlVaeDecoder) running on the trainable
// tensors, so what is trained is what the bundle decodes with.
//
// The encoder is vae.py Encoder with the decoder's config (AutoencoderKL builds
// both from one ch_mult/ch; double_z): conv_in, per level num_res_blocks
// ResnetBlocks (self-attention after each block of a level whose resolution is in
// attn_resolutions) and a pad(0,1,0,1) + stride-2 conv below all but the last,
// mid block (ResnetBlock, attention, ResnetBlock), GroupNorm, swish, conv_out to
// 2 * embed_dim; quant_conv is a 1x1 conv 2E -> 2E. Blocks are the engine's
// (conv_blocks, the same ResnetBlock/AttnBlock as vae.py).
//
// The encoder and quant_conv are training-only: bundles (like the MAR converter's
// output for kl16.ckpt) carry post_quant_conv and the decoder, so the encoder
// lives here and not in engine/models/mar.
#include <nlohmann/json_fwd.hpp>

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/mar/mar_config.h"
#include "engine/training/parameter_set.h"

namespace kvs::mar {
class KlVaeDecoder;
}

namespace kvs::training {

struct KlVaeModelConfig {
  mar::KlVaeConfig arch;    // what bundles store (latent_scale is set later, from the MAR run)
  double kl_weight = 1e-4;  // see kl_vae_trainer.h for the loss
  void validate() const;
};

nlohmann::json to_json(const KlVaeModelConfig& c);
KlVaeModelConfig kl_vae_model_config_from_json(const nlohmann::json& j);

// encoder.*, quant_conv.*, then the inference tensors (mar::kl_vae_expected_tensors).
std::vector<io::ExpectedTensor> kl_vae_encoder_expected_tensors(const mar::KlVaeConfig& c);
std::vector<io::ExpectedTensor> kl_vae_training_expected_tensors(const mar::KlVaeConfig& c);
// PyTorch's default layer init (vae.py does not re-initialise), norms 1 / 0.
ParameterSet init_kl_vae_parameters(const KlVaeModelConfig& c, uint64_t seed, at::Device device);

// DiagonalGaussianDistribution(moments): logvar clamped to [-30, 20].
struct KlPosterior {
  at::Tensor mean, logvar;  // [B, E, h, w]
  at::Tensor std() const;
  // 0.5 * sum(mean^2 + var - 1 - logvar) over (E, h, w): [B].
  at::Tensor kl() const;
  // mean + std * noise (noise ~ N(0, 1) drawn from `gen`).
  at::Tensor sample(at::Generator& gen) const;
};
KlPosterior posterior_from_moments(const at::Tensor& moments);

class KlVaeModel {
 public:
  // `weights` as from ParameterSet::as_map() (shared, so updates are seen) or a checkpoint.
  KlVaeModel(KlVaeModelConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device);
  ~KlVaeModel();
  KlVaeModel(KlVaeModel&&) noexcept;

  const KlVaeModelConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  const mar::KlVaeDecoder& decoder() const { return *decoder_; }
  // The latent grid of an image_size x image_size input.
  int64_t latent_size(int64_t image_size) const;

  // Encoder + quant_conv: images [B, 3, H, W] in [-1, 1] -> moments [B, 2E, h, w].
  at::Tensor encode_moments(const at::Tensor& images) const;
  KlPosterior encode(const at::Tensor& images) const { return posterior_from_moments(encode_moments(images)); }
  // post_quant_conv + Decoder (the engine's), unclamped [B, 3, H, W].
  at::Tensor decode(const at::Tensor& z) const;

 private:
  KlVaeModelConfig config_;
  at::Device device_;
  std::map<std::string, at::Tensor> weights_;
  std::unique_ptr<mar::KlVaeDecoder> decoder_;
};

}  // namespace kvs::training
