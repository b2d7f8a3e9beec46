#pragma once
// A tiny random MAR model for the masked-family tests: 4x4 tokens at 64 px
// (vae_stride 16), buffer 4, width 32, 2 heads, 5 classes, a 1-block diffusion
// head with 5 sampling steps, and a 2-level KL VAE decoder — built as a bundle in
// a temporary folder and loaded through the real loader.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "engine/io/model_bundle.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random_init.h"
#include "tests/engine/test_helpers.h"

namespace kvs::test {

// decoder_depth >= 4 gives LazyMAR's similarity block (index 3) a block of its own.
inline mar::MarConfig tiny_mar_config(int64_t img_size = 64, int64_t decoder_depth = 2) {
  mar::MarConfig c;
  c.img_size = img_size;
  c.vae_stride = 16;
  c.vae_embed_dim = 4;
  c.encoder_embed_dim = c.decoder_embed_dim = 32;
  c.encoder_depth = 2;
  c.decoder_depth = decoder_depth;
  c.encoder_num_heads = c.decoder_num_heads = 2;
  c.class_num = 5;
  c.buffer_size = 4;
  c.diffloss_d = 1;
  c.diffloss_w = 32;
  c.num_sampling_steps = "5";
  return c;
}

inline mar::KlVaeConfig tiny_kl_vae() {
  mar::KlVaeConfig c;
  c.embed_dim = 4;
  c.ch = 32;
  c.ch_mult = {1, 1};
  c.num_res_blocks = 1;
  return c;
}

struct TinyMar {
  TempDir dir;
  mar::MarModel model;
  explicit TinyMar(const mar::MarConfig& config = tiny_mar_config(), uint64_t seed = 5) {
    mar::write_random_mar_bundle(dir.path().string(), "tiny-mar", config, tiny_kl_vae(), seed);
    model = mar::MarModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU));
  }
};

}  // namespace kvs::test
