#pragma once
// Trains VAR's multi-scale VQVAE on the procedural world (run folder WORK/var-vae).
//
// Loss: MSE reconstruction + VectorQuantizer2's vq loss (var_vae_model.h). The VAR
// repository publishes no tokenizer training code (its VQVAE comes pretrained with
// perceptual and adversarial terms); LPIPS needs pretrained VGG weights we cannot
// ship and the quality gate is reconstruction PSNR, which MSE optimises directly —
// the same choice as the LlamaGen demo tokenizer. Augmentation: left-right flips.
//
// Dead-code restarts (not upstream; a standard VQ remedy, e.g. Jukebox): the usage
// buffer quantize.ema_vocab_hit_SV is kept as upstream keeps it (EMA of per-scale
// hits: copy at the first step, 0.9 for 100 steps, then 0.99); every
// restart_every steps until restart_until_fraction of the run, codes whose summed
// EMA hits fall below upstream's usage margin (0.08 x the hits an evenly used
// codebook would get) are re-drawn from the residual vectors the lookups of that
// step saw. The buffer lives in the checkpoint, so resumed runs restart the same codes.
#include <cstdint>
#include <string>

#include "engine/training/training_loop.h"
#include "engine/training/var/var_vae_model.h"

namespace kvs::var {
class MultiScaleVqvae;
}

namespace kvs::training {

struct VarVaeTrainSetup {
  VarVaeModelConfig model;
  int image_size = 64;
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
  bool flip = true;
  int64_t restart_every = 100;          // <= 0: no dead-code restarts
  double restart_until_fraction = 0.5;  // of options.steps
};

// Mean per-image PSNR (8-bit, as kvs::psnr) of held-out round trips: the training
// encoder's ids -> `decoder`'s ids_to_fhat -> fhat_to_img -> uint8 the way the engine
// converts generated VAR images. `decoder` is the training model's own
// (model.vqvae()) or a loaded bundle's.
double var_reconstruction_psnr(const VarVaeModel& encoder, const var::MultiScaleVqvae& decoder,
                               const at::Tensor& pixels_nhwc, int64_t batch_size = 50);

// The tokenizer gate of a VAR bundle: the training encoder of WORK/var-vae through
// the bundle's own MultiScaleVqvae (shipped dtype).
double var_bundle_tokenizer_psnr(const std::string& work_dir, const var::MultiScaleVqvae& decoder,
                                 const at::Tensor& pixels_nhwc, at::Device device);

TrainSummary train_var_vae(const TrainOptions& options, const VarVaeTrainSetup& setup);

}  // namespace kvs::training
