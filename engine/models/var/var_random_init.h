#pragma once
// Randomly initialised VAR bundles: speed/memory experiments at official sizes
// without a download (`kvstudio-cli create-random --preset var-d16`, bench
// `--random var-d16`), a small untrained demo size, and models built in tests.
// Seeded and deterministic.
//
// Init (chosen so that outputs are not degenerate, unlike upstream's near-identity
// init_weights with init_adaln_gamma 1e-5 and init_head 0.02): class embedding
// N(0,1); pos_start, pos_1LC, lvl_embed N(0, 0.5^2); Linear/Conv weights
// N(0, 1/fan_in), AdaLN projections N(0, 0.25/fan_in); ada_gss N(0, 0.3^2); the
// per-head attention scale ln 4 (upstream's init); GroupNorm weights 1; biases 0;
// codebook N(0, 0.5^2).
#include <cstdint>
#include <string>

#include "engine/models/var/var_config.h"

namespace kvs::var {

// Writes DIR/model.json + DIR/weights.safetensors; `weights_dtype`: f32 | f16 | bf16.
void write_random_var_bundle(const std::string& dir, const std::string& name, const VarConfig& var,
                             const VqvaeConfig& vae, uint64_t seed, const std::string& weights_dtype = "f32");

// A small VAR for demos and tests: depth 6, width 256 (4 heads of 64), 10 classes,
// the 256-px scale schedule over a 16x16 final map, a 1024-code VQVAE with a
// 3-level decoder (64x64 px images).
VarConfig demo_var_config();
VqvaeConfig demo_vqvae_config();

}  // namespace kvs::var
