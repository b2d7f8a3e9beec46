#pragma once
// World images as MAR training data: the trained KL VAE's posterior moments of
// every image and of its left-right mirror, encoded once and cached in the MAR run
// folder keyed by the VAE checkpoint (upstream main_cache.py caches the moments of
// the image and of its flip; training draws posterior.sample() * scale from one of
// the two at random, as CachedFolder + engine_mar.py do).
//
// Latent scale: upstream multiplies kl16 latents by 0.2325 (~1 / their std on
// ImageNet) so that MAR's tokens have about unit variance. Our VAE is new, so the
// scale is measured: 1 / std of posterior samples over the training images
// (Var = Var(mean) + E[exp(logvar)]), recorded in the MAR run and in the bundle's
// tokenizer.latent_scale, which the engine divides by before decoding.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "engine/training/world_dataset.h"

namespace kvs::training {

class KlVaeModel;

struct LatentSet {
  at::Tensor moments;       // [N, 2E, h, w] float32, CPU (quant_conv output: mean, logvar)
  at::Tensor moments_flip;  // the same of the mirrored images (undefined when not cached)
  at::Tensor labels;        // [N] int64
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

LatentSet encode_latents(const KlVaeModel& vae, const WorldImageSet& images, bool with_flips, int64_t batch_size = 50);
// As encode_latents, re-using `cache_path` when it holds the same images encoded by
// the same VAE checkpoint (`vae_id`).
LatentSet encode_latents_cached(const KlVaeModel& vae, const WorldImageSet& images, bool with_flips,
                                const std::string& cache_path, const std::string& vae_id, int64_t batch_size = 50);

// 1 / std of posterior samples of `moments` (the scale that gives unit variance).
double measured_latent_scale(const at::Tensor& moments);

}  // namespace kvs::training
