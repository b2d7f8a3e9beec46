#pragma once
// Tiny random VAR models for the next-scale tests: width 64, 2 heads, 5 classes,
// a 32-code vocabulary with Cvae 8, and a 1-level VQVAE decoder over the same
// scale schedule — built as a bundle in a temporary folder and loaded through
// the real loader.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_random_init.h"
#include "tests/engine/test_helpers.h"

namespace kvs::test {

inline var::VarConfig tiny_var_config(int64_t depth, std::vector<int64_t> patch_nums, bool shared_aln = false,
                                      bool l2_norm = true) {
  var::VarConfig c;
  c.depth = depth;
  c.embed_dim = 64;
  c.num_heads = 2;
  c.num_classes = 5;
  c.vocab_size = 32;
  c.cvae = 8;
  c.patch_nums = std::move(patch_nums);
  c.shared_aln = shared_aln;
  c.attn_l2_norm = l2_norm;
  return c;
}

// The multi-scale VQVAE that matches `config` (vocabulary, Cvae, scales).
inline var::VqvaeConfig tiny_var_vqvae(const var::VarConfig& config) {
  var::VqvaeConfig c;
  c.vocab_size = config.vocab_size;
  c.z_channels = config.cvae;
  c.ch = 32;
  c.ch_mult = {1, 1};
  c.num_res_blocks = 1;
  c.v_patch_nums = config.patch_nums;
  return c;
}

struct TinyVar {
  TempDir dir;
  var::VarModel model;
  TinyVar(const var::VarConfig& config, uint64_t seed) {
    var::write_random_var_bundle(dir.path().string(), "tiny-var", config, tiny_var_vqvae(config), seed);
    model = var::VarModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU));
  }
};

}  // namespace kvs::test
