#pragma once
// Trains LlamaGen's VQ tokenizer on the procedural world (run folder WORK/vq).
//
// Loss: upstream's generator loss without the perceptual (LPIPS) and adversarial
// terms — rec_weight * MSE + vq_loss + commit_loss + entropy_loss. LPIPS needs
// pretrained VGG weights we cannot ship, and the quality gate is reconstruction
// PSNR, which MSE optimises directly. Augmentation: random left-right flips.
//
// With `decoder_from` (a llamagen or janus-pro bundle) the run fits an encoder to
// that bundle's decoder half instead: codebook, post_quant_conv and decoder are
// the bundle's and stay frozen (no gradient, no update, no decay), and only
// encoder.* and quant_conv.* train (from the bundle's own encoder when it ships
// one). The codes such an encoder gives are what a generator trained on the
// bundle's codebook reads, so a shipped generator can be trained on after its run
// folder is gone (bundle_start.h).
#include <cstdint>
#include <string>

#include "engine/training/llamagen/vq_model.h"
#include "engine/training/training_loop.h"

namespace kvs::training {

struct VqTrainSetup {
  VqModelConfig model;
  int image_size = 64;
  int64_t train_per_class = 1000;  // training images per class (seeds 0..n-1)
  int64_t eval_per_class = 20;     // held-out images per class for the PSNR curve
  bool flip = true;
  std::string
      decoder_from;  // a bundle folder: fit the encoder to its frozen decoder (model and image_size come from it)
};

// The evaluation the trainer logs and `kvstudio-train evaluate` reports: mean
// per-image PSNR (8-bit, peak 255, as kvs::psnr) of encode -> decode round trips,
// images converted to uint8 the way the engine converts generated images.
double reconstruction_psnr(const VqModel& model, const at::Tensor& pixels_nhwc, int64_t batch_size = 50);

TrainSummary train_vq(const TrainOptions& options, const VqTrainSetup& setup);

}  // namespace kvs::training
