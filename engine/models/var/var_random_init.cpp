#include "engine/models/var/var_random_init.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/random_bundle.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_weights.h"

namespace kvs::var {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  if (n.ends_with(".bias") || n.ends_with("_bias")) return at::zeros(e.shape, f32);
  if (n.ends_with("scale_mul_1H11")) return at::full(e.shape, std::log(4.0), f32);
  if (n == "class_emb.weight") return at::normal(0.0, 1.0, e.shape, gen, f32);
  if (n == "pos_start" || n == "pos_1LC" || n == "lvl_embed.weight") return at::normal(0.0, 0.5, e.shape, gen, f32);
  if (n == "quantize.embedding.weight") return at::normal(0.0, 0.5, e.shape, gen, f32);
  if (n.ends_with("ada_gss")) return at::normal(0.0, 0.3, e.shape, gen, f32);
  if (e.shape.size() == 1) return at::ones(e.shape, f32);  // GroupNorm weights
  const double fan_in = static_cast<double>(io::fan_in(e));
  const double variance = contains(n, "ada_lin") ? 0.25 / fan_in : 1.0 / fan_in;
  return at::normal(0.0, std::sqrt(variance), e.shape, gen, f32);
}

}  // namespace

void write_random_var_bundle(const std::string& dir, const std::string& name, const VarConfig& var,
                             const VqvaeConfig& vae, uint64_t seed, const std::string& weights_dtype) {
  var.validate();
  vae.validate();
  check_compatible(var, vae);
  io::write_random_bundle(dir, var_manifest(name, var, vae, io::random_init_provenance(seed)),
                          {{"var.", var_expected_tensors(var), init_tensor},
                           {"vae.", vqvae_expected_tensors(vae), init_tensor}},
                          seed, weights_dtype);
}

VarConfig demo_var_config() {
  VarConfig c;
  c.depth = 6;
  c.embed_dim = 256;
  c.num_heads = 4;
  c.num_classes = 10;
  c.vocab_size = 1024;
  c.cvae = 16;
  c.patch_nums = patch_nums_for_resolution(256);
  return c;
}

VqvaeConfig demo_vqvae_config() {
  VqvaeConfig c;
  c.vocab_size = 1024;
  c.z_channels = 16;
  c.ch = 32;
  c.ch_mult = {1, 1, 2};
  c.v_patch_nums = patch_nums_for_resolution(256);
  return c;
}

}  // namespace kvs::var
