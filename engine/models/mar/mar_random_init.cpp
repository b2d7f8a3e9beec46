#include "engine/models/mar/mar_random_init.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/random_bundle.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_weights.h"

namespace kvs::mar {
namespace {

at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  if (n == "class_emb.weight" || n == "fake_latent" || n == "mask_token")
    return at::normal(0.0, 1.0, e.shape, gen, f32);
  if (n.ends_with("pos_embed_learned")) return at::normal(0.0, 0.5, e.shape, gen, f32);
  if (n.ends_with(".bias")) return at::zeros(e.shape, f32);
  if (e.shape.size() == 1) return at::ones(e.shape, f32);  // LayerNorm / GroupNorm weights
  const bool output_layer = n == "diffloss.net.final_layer.linear.weight" || n == "decoder.conv_out.weight";
  const double variance = (output_layer ? 0.25 : 1.0) / static_cast<double>(io::fan_in(e));
  return at::normal(0.0, std::sqrt(variance), e.shape, gen, f32);
}

}  // namespace

void write_random_mar_bundle(const std::string& dir, const std::string& name, const MarConfig& mar,
                             const KlVaeConfig& vae, uint64_t seed, const std::string& weights_dtype,
                             const nlohmann::json* sampling_defaults) {
  mar.validate();
  vae.validate();
  check_compatible(mar, vae);
  GaussianDiffusion check_schedule(mar.num_sampling_steps);  // rejects a bad respacing before writing
  nlohmann::json manifest = mar_manifest(name, mar, vae, io::random_init_provenance(seed));
  if (sampling_defaults) manifest["sampling_defaults"] = *sampling_defaults;
  io::write_random_bundle(dir, manifest,
                          {{"mar.", mar_expected_tensors(mar), init_tensor},
                           {"vae.", kl_vae_expected_tensors(vae), init_tensor}},
                          seed, weights_dtype);
}

MarConfig demo_mar_config() {
  MarConfig c;
  c.img_size = 64;
  c.vae_stride = 4;
  c.vae_embed_dim = 4;
  c.encoder_embed_dim = c.decoder_embed_dim = 128;
  c.encoder_depth = c.decoder_depth = 2;
  c.encoder_num_heads = c.decoder_num_heads = 4;
  c.class_num = 10;
  c.buffer_size = 16;
  c.diffloss_d = 3;
  c.diffloss_w = 128;
  c.num_sampling_steps = "ddim25";  // see demo_mar_config() in the header
  return c;
}

KlVaeConfig demo_kl_vae_config() {
  KlVaeConfig c;
  c.embed_dim = 4;
  c.ch = 32;
  c.ch_mult = {1, 1, 2};
  c.num_res_blocks = 1;
  c.resolution = 64;
  c.latent_scale = 1.0;
  return c;
}

}  // namespace kvs::mar
