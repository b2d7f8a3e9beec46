#pragma once
// Trains MAR's KL VAE on the procedural world (run folder WORK/kl-vae).
//
// Upstream (LTH14/mar ships kl16.ckpt trained with the LDM recipe): L1 + LPIPS
// reconstruction, a PatchGAN discriminator, KL weight 1e-6 against per-pixel sums.
// Ours: no LPIPS (it needs pretrained VGG weights we cannot ship) and no GAN (the
// quality gate is PSNR and a tiny demo does not need sharper textures), so
//   loss = mean (x_hat - x)^2 + kl_weight * mean_images(KL(q(z|x) || N(0, I))) / pixels
// where pixels = 3 H W, i.e. the KL per image is weighed against the per-pixel MSE.
// kl_weight 1e-4 (default) keeps the posterior noisy enough for a smooth latent
// while costing ~1% of the loss; the decoder sees posterior samples, as upstream.
// Augmentation: left-right flips. The latent scale MAR multiplies the latents by
// is measured on the trained VAE by the MAR trainer (mar_latents.h), not here.
#include <cstdint>
#include <string>

#include "engine/training/mar/kl_vae_model.h"
#include "engine/training/training_loop.h"

namespace kvs::mar {
class KlVaeDecoder;
}

namespace kvs::training {

struct KlVaeTrainSetup {
  KlVaeModelConfig model;
  int image_size = 64;
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
  bool flip = true;
};

// The VAE loss of images `x` [B, 3, H, W] in [-1, 1]; `noise_gen` draws the posterior samples.
struct KlVaeLoss {
  at::Tensor loss, rec_mse, kl_per_image;  // scalars (loss and rec_mse with autograd)
  at::Tensor reconstruction;
  double posterior_std = 0;  // mean std of q(z|x) (how noisy the latent is)
};
KlVaeLoss kl_vae_loss(const KlVaeModel& model, const at::Tensor& x, at::Generator& noise_gen);

// Mean per-image PSNR (8-bit, as kvs::psnr) of held-out round trips: `encoder`'s
// posterior mean, multiplied by the decoder's latent_scale (what MAR generates),
// through `decoder`.decode_tokens -> uint8 as the engine converts MAR images.
// `decoder` is the training model's own or a loaded bundle's.
double kl_vae_reconstruction_psnr(const KlVaeModel& encoder, const mar::KlVaeDecoder& decoder,
                                  const at::Tensor& pixels_nhwc, int64_t batch_size = 50);

// The tokenizer gate of a MAR bundle: the training encoder of WORK/kl-vae through
// the bundle's own decoder (shipped dtype and latent scale).
double kl_vae_bundle_tokenizer_psnr(const std::string& work_dir, const mar::KlVaeDecoder& decoder,
                                    const at::Tensor& pixels_nhwc, at::Device device);

TrainSummary train_kl_vae(const TrainOptions& options, const KlVaeTrainSetup& setup);

}  // namespace kvs::training
