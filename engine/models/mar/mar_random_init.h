#pragma once
// Randomly initialised MAR bundles: speed/memory experiments at official sizes
// without a download (`kvstudio-cli create-random --preset mar-B`, bench
// `--random mar-B`), a small untrained demo size, and models built in tests.
// Seeded and deterministic.
//
// Init (chosen so that outputs are not degenerate, unlike upstream's zero-init
// adaLN modulations and output layers, which make an untrained head output
// exactly zero): class embedding, fake latent and mask token N(0, 1); position
// embeddings N(0, 0.5^2); Linear/Conv weights N(0, 1/fan_in), the diffusion
// head's output layer and the VAE's conv_out N(0, 0.25/fan_in); LayerNorm and
// GroupNorm weights 1; biases 0 — the conformance cases' re-initialisation
// without its norm-weight jitter.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

// Writes DIR/model.json + DIR/weights.safetensors; `weights_dtype`: f32 | f16 | bf16.
// `sampling_defaults`: written when not null (e.g. mar_sampling_defaults(preset)).
void write_random_mar_bundle(const std::string& dir, const std::string& name, const MarConfig& mar,
                             const KlVaeConfig& vae, uint64_t seed, const std::string& weights_dtype = "f32",
                             const nlohmann::json* sampling_defaults = nullptr);

// A small MAR for demos and tests, sized to be trainable at one CPU thread
// (`kvstudio-train kl-vae` / `mar`, app/train/mar_demo_recipe.sh): 64 px images,
// 4x downsampling to a 16x16 grid of 4-channel tokens (the LDM "f4" shape: a
// 16-channel grid at 4x would keep nearly every pixel detail, too much for a tiny
// MAR to model), encoder and decoder 2 blocks of width 128 (4 heads), a
// 16-position buffer (upstream 64), a 3 x 128 diffusion head sampling 25 respaced
// steps, 10 classes (trained bundles take the world's count); a KL VAE decoder
// with ch 32, ch_mult 1,1,2 and one ResnetBlock per level (+1 in the decoder).
// The head samples with respacing "ddim25" (t = 0, 40, ..., 960; upstream's
// space_timesteps option) rather than "25" (which keeps t = 999): at t = 999 the
// cosine schedule has alpha_bar ~ 2e-9, so the first reverse step multiplies the
// head's noise-prediction error by ~1300 (x0 = (x_t - sqrt(1 - abar) eps) / sqrt(abar),
// then the posterior mean's coefficient ~0.065) — a head trained for ~10^4 steps
// is not that precise and its samples blow up to |x| ~ 10^3 (LTH14/mar issue #27:
// upstream needs ~100k steps); from t = 960 the factor is ~1.5.
MarConfig demo_mar_config();
KlVaeConfig demo_kl_vae_config();

}  // namespace kvs::mar
