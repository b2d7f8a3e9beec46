#pragma once
// VAR's multi-scale VQVAE as a trainable model (FoundationVision/VAR models/vqvae.py
// VQVAE.forward): Encoder -> quant_conv -> VectorQuantizer2 (multi-scale residual
// quantisation) -> post_quant_conv -> Decoder, under the official state-dict names.
// Everything after the encoder is the engine's own inference code
// (var::MultiScaleVqvae: codebook lookup, bicubic up-sampling + phi, post_quant_conv,
// VaeDecoder) running on the trainable tensors, so what is trained is what generates.
//
// The encoder is basic_vae.py Encoder with the decoder's ddconfig (VQVAE builds both
// from one dict): conv_in, per level num_res_blocks ResnetBlocks (self-attention after
// each block of the lowest resolution) and a stride-2 conv below all but the last,
// mid block (ResnetBlock, attention, ResnetBlock), GroupNorm, SiLU, conv_out to Cvae.
// Blocks are the engine's (conv_blocks, var::vae_attn_block).
//
// Quantiser training path, as VectorQuantizer2.forward: starting from the residual
// f_rest = sg(f), for every scale si: ids = nearest codes of the area-downsampled
// residual (MultiScaleVqvae::lookup_scale, l2 distance on raw codes:
// using_znorm=False), h = phi_si(bicubic_up(codebook[ids])), f_hat += h,
// f_rest -= h; loss = mean over scales of beta * mse(sg(f_hat), f) + mse(f_hat, sg(f))
// (the commitment and codebook terms on the running f_hat); the decoder sees the
// straight-through f_hat = (sg(f_hat) - sg(f)) + f.
#include <nlohmann/json_fwd.hpp>

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/var/var_config.h"
#include "engine/training/parameter_set.h"

namespace kvs::var {
class MultiScaleVqvae;
}

namespace kvs::training {

struct VarVaeModelConfig {
  var::VqvaeConfig arch;  // what bundles store
  double beta = 0.25;     // VectorQuantizer2 beta (commitment weight)
  void validate() const;
};

nlohmann::json to_json(const VarVaeModelConfig& c);
VarVaeModelConfig var_vae_model_config_from_json(const nlohmann::json& j);

// The codebook-usage buffer of VectorQuantizer2 (EMA of per-scale code hits), kept
// with the parameters so that checkpoints carry it (it never has a gradient, so
// AdamW leaves it alone; export drops it).
inline constexpr const char* kVocabHitBuffer = "quantize.ema_vocab_hit_SV";

// encoder.*, quant_conv.*, then the inference tensors (var::vqvae_expected_tensors),
// then the usage buffer.
std::vector<io::ExpectedTensor> var_vae_expected_tensors(const VarVaeModelConfig& c);
// PyTorch's default layer init; codebook N(0, 1) (nn.Embedding's default: VQVAE
// does not call eini); usage buffer 0.
ParameterSet init_var_vae_parameters(const VarVaeModelConfig& c, uint64_t seed, at::Device device);

struct VarQuantized {
  at::Tensor f_hat;             // [B, Cvae, h, w], straight-through (what the decoder gets)
  at::Tensor f_hat_codes;       // the same value as accumulated from the codes (detached)
  std::vector<at::Tensor> ids;  // per scale [B, pn*pn] int64
  at::Tensor vq_loss;           // scalar (when losses were asked for)
  at::Tensor lookup_inputs;     // [B * L, Cvae] the residual vectors each lookup saw (when asked)
};

struct VarVaeOutput {
  at::Tensor reconstruction;  // [B, 3, H, W], unclamped decoder output
  VarQuantized quantized;
};

class VarVaeModel {
 public:
  // `weights` as from ParameterSet::as_map() (shared, so updates are seen) or a checkpoint.
  VarVaeModel(VarVaeModelConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device);
  ~VarVaeModel();
  VarVaeModel(VarVaeModel&&) noexcept;

  const VarVaeModelConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  const var::MultiScaleVqvae& vqvae() const { return *vqvae_; }

  at::Tensor encode(const at::Tensor& images) const;  // Encoder + quant_conv -> f [B, Cvae, h, w]
  VarQuantized quantize(const at::Tensor& f, bool with_losses, bool with_lookup_inputs = false) const;
  at::Tensor decode(const at::Tensor& f_hat) const;  // post_quant_conv + Decoder (engine), unclamped
  VarVaeOutput forward(const at::Tensor& images, bool with_losses, bool with_lookup_inputs = false) const;
  // img_to_idxBl: per-scale ids, no autograd (the engine's f_to_ids on the encoder's f).
  std::vector<at::Tensor> encode_ids(const at::Tensor& images) const;

 private:
  VarVaeModelConfig config_;
  at::Device device_;
  std::map<std::string, at::Tensor> weights_;
  std::unique_ptr<var::MultiScaleVqvae> vqvae_;
};

}  // namespace kvs::training
