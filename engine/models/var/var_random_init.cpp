#include "engine/models/var/var_random_init.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_weights.h"

namespace kvs::var {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  if (ends_with(n, ".bias") || ends_with(n, "_bias")) return at::zeros(e.shape, f32);
  if (ends_with(n, "scale_mul_1H11")) return at::full(e.shape, std::log(4.0), f32);
  if (n == "class_emb.weight") return at::normal(0.0, 1.0, e.shape, gen, f32);
  if (n == "pos_start" || n == "pos_1LC" || n == "lvl_embed.weight") return at::normal(0.0, 0.5, e.shape, gen, f32);
  if (n == "quantize.embedding.weight") return at::normal(0.0, 0.5, e.shape, gen, f32);
  if (ends_with(n, "ada_gss")) return at::normal(0.0, 0.3, e.shape, gen, f32);
  if (e.shape.size() == 1) return at::ones(e.shape, f32);  // GroupNorm weights
  int64_t fan_in = 1;
  for (size_t i = 1; i < e.shape.size(); ++i) fan_in *= e.shape[i];
  const double variance = contains(n, "ada_lin") ? 0.25 / static_cast<double>(fan_in)
                                                 : 1.0 / static_cast<double>(fan_in);
  return at::normal(0.0, std::sqrt(variance), e.shape, gen, f32);
}

}  // namespace

void write_random_var_bundle(const std::string& dir, const std::string& name, const VarConfig& var,
                             const VqvaeConfig& vae, uint64_t seed, const std::string& weights_dtype) {
  var.validate();
  vae.validate();
  check_compatible(var, vae);
  const at::ScalarType dtype = io::parse_weights_dtype(weights_dtype);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  io::NamedTensors tensors;
  for (const auto& e : var_expected_tensors(var)) tensors.emplace_back("var." + e.name, init_tensor(e, gen).to(dtype));
  for (const auto& e : vqvae_expected_tensors(vae))
    tensors.emplace_back("vae." + e.name, init_tensor(e, gen).to(dtype));
  io::write_bundle(dir, var_manifest(name, var, vae, io::random_init_provenance(seed)), tensors);
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
