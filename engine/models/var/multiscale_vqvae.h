#pragma once
// The parts of VAR's multi-scale VQVAE that generation uses (models/quant.py
// VectorQuantizer2 + models/vqvae.py VQVAE):
//   - the codebook: token ids of a scale -> h [B, Cvae, pn, pn];
//   - residual accumulation of f_hat at the final resolution H x W: every scale but
//     the last is upsampled bicubically (align_corners=False, A = -0.75) to H x W,
//     passed through its phi convolution (phi(h) = (1 - r) h + r conv3x3(h),
//     r = |quant_resi|, partially shared by the hard-coded scale -> phi schedule
//     of var_config.h) and added;
//   - the next scale's transformer input: f_hat area-downsampled (F.interpolate
//     mode 'area' == adaptive average pooling) to the next scale's size;
//   - fhat_to_img: decoder(post_quant_conv(f_hat)) clamped to [-1, 1].
// After any scale the current f_hat decodes into a preview of the whole image.
#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/models/var/vae_decoder.h"
#include "engine/models/var/var_config.h"

namespace kvs::var {

class MultiScaleVqvae {
 public:
  // `weights`: VQVAE state_dict names without prefix, already shape-checked.
  // `decoder_dtype`: what the convolutional decoder runs in (the run-time dtype).
  // The quantizer (codebook, phi convolutions, post_quant_conv) and f_hat stay
  // float32 whatever it is: f_hat sums every scale's contribution and each next
  // scale's input is read back from it, so rounding it to bf16 would compound over
  // the scales, and these weights are a small share of the model.
  MultiScaleVqvae(VqvaeConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                  at::ScalarType decoder_dtype = at::kFloat);

  const VqvaeConfig& config() const { return config_; }
  at::Device device() const { return device_; }
  int64_t scales() const { return static_cast<int64_t>(config_.v_patch_nums.size()); }
  int64_t final_grid() const { return config_.v_patch_nums.back(); }

  // A zero f_hat [B, Cvae, H, W] on the device.
  at::Tensor empty_fhat(int64_t batch) const;
  // Codebook rows of scale si's ids [B, pn*pn] (row-major) as [B, Cvae, pn, pn].
  at::Tensor embed_scale(const at::Tensor& ids, int64_t si) const;
  // What scale si adds to f_hat: phi_si(up(h)), h [B, Cvae, pn, pn] bicubically
  // upsampled to the final grid (not at the last scale). Differentiable: the VAE
  // trainer runs the same arithmetic with gradients.
  at::Tensor scale_contribution(const at::Tensor& h, int64_t si) const;
  // get_next_autoregressive_input's f_hat update: f_hat += scale_contribution(h, si)
  // (in place).
  void accumulate(at::Tensor& f_hat, const at::Tensor& h, int64_t si) const;
  // VectorQuantizer2's nearest-code lookup for scale si (using_znorm=False, as every
  // official VAR tokenizer): the residual f_rest [B, Cvae, H, W] area-downsampled to
  // pn x pn (as is at the last scale), then argmin of the squared l2 distance
  // |r|^2 + |e|^2 - 2 r.e to the raw codebook rows -> ids [B, pn*pn]. No autograd.
  at::Tensor lookup_scale(const at::Tensor& f_rest, int64_t si) const;
  // f_to_idxBl_or_fhat(to_fhat=False): the encoder's latent f [B, Cvae, H, W] (after
  // quant_conv) -> ids of every scale, by residual quantisation (each scale's
  // contribution is subtracted from the residual before the next lookup).
  std::vector<at::Tensor> f_to_ids(const at::Tensor& f) const;
  const at::Tensor& codebook() const { return embedding_; }
  // The next scale's input map: area-downsampled f_hat [B, Cvae, pn_{si+1}, pn_{si+1}].
  at::Tensor next_scale_input(const at::Tensor& f_hat, int64_t si) const;
  // idxBl_to_var_input: the teacher-forcing input [B, L - first_l, Cvae] for the
  // ground-truth ids of every scale (ids[si]: [B, pn_si^2]).
  at::Tensor ids_to_var_input(const std::vector<at::Tensor>& ids) const;
  // f_hat after accumulating every scale of `ids` (embed_to_fhat with all_to_max_scale).
  at::Tensor ids_to_fhat(const std::vector<at::Tensor>& ids) const;

  // decoder(post_quant_conv(f_hat)), unclamped ("dec_raw").
  at::Tensor decode_raw(const at::Tensor& f_hat) const;
  // fhat_to_img: decode_raw clamped to [-1, 1].
  at::Tensor fhat_to_img(const at::Tensor& f_hat) const;

 private:
  at::Tensor phi(const at::Tensor& h, int64_t si) const;

  VqvaeConfig config_;
  at::Device device_;
  at::Tensor embedding_;  // [V, Cvae]
  std::vector<at::Tensor> phi_weight_, phi_bias_;
  std::vector<int64_t> phi_schedule_;  // scale -> phi
  at::Tensor post_quant_weight_, post_quant_bias_;
  std::unique_ptr<VaeDecoder> decoder_;
};

// [B, 3, H, W] in [-1, 1] -> uint8 [B, H, W, 3] as upstream's demo_sample.ipynb:
// autoregressive_infer_cfg returns (x + 1) * 0.5, the demo multiplies by 255 and
// truncates (np.uint8).
at::Tensor var_images_to_uint8_nhwc(const at::Tensor& images);

}  // namespace kvs::var
