#pragma once
// A loaded MAR pipeline: encoder–decoder + diffusion head + its sampler + the
// KL VAE decoder, from a bundle (family "mar") or from any safetensors file
// holding "mar." and "vae." tensors under their official names (the
// conformance cases).
//
// Bundle manifest: {"family": "mar", "architecture": {"mar": MarConfig},
// "tokenizer": KlVaeConfig, "files": {"weights": ...}, "sampling_defaults":
// {"cfg_scale", "cfg_schedule", "temperature", "steps"}?, ...} (io/model_bundle.h).
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/kl_vae_decoder.h"
#include "engine/models/mar/mar_transformer.h"

namespace kvs::io {
class SafetensorsReader;
}

namespace kvs::mar {

struct MarModel {
  std::string name;
  std::vector<std::string> class_names;
  std::unique_ptr<MarTransformer> transformer;
  std::unique_ptr<DiffusionHead> head;
  std::unique_ptr<GaussianDiffusion> diffusion;  // gen_diffusion: respaced to config.num_sampling_steps
  std::unique_ptr<KlVaeDecoder> vae;

  // Strictly checks every tensor (missing, unexpected, shape, floating dtype)
  // before building. Tensors outside "mar." / "vae." are unexpected too.
  static MarModel from_weights(const MarConfig& mar_config, const KlVaeConfig& vae_config,
                               const io::SafetensorsReader& weights, at::Device device,
                               at::ScalarType dtype = at::kFloat);
  // `dtype`: the run-time dtype weights and caches are kept in (float32 for
  // conformance and training); each part keeps its numerically sensitive steps in float32.
  static MarModel load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype = at::kFloat);

  const MarConfig& config() const { return transformer->config(); }
  int64_t image_size() const;  // seq_h * patch_size * the VAE's upsampling
  // [B, seq_len, token_embed_dim] -> [B, C, seq_h * p, seq_w * p] (MAR.unpatchify).
  at::Tensor unpatchify(const at::Tensor& tokens) const;
  // Token sequences -> images [B, 3, H, W] (raw decoder output, vae.decode(tokens / 0.2325)).
  at::Tensor decode_tokens(const at::Tensor& tokens) const;
};

// Bundle manifest sections for a MAR model.
nlohmann::json mar_manifest(const std::string& name, const MarConfig& mar, const KlVaeConfig& vae,
                            const nlohmann::json& provenance);

}  // namespace kvs::mar
