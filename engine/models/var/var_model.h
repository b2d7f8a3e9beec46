#pragma once
// A loaded VAR pipeline: the next-scale transformer + the multi-scale VQVAE, from a
// bundle (family "var") or from any safetensors file holding "var." and "vae."
// tensors under their official names (the conformance cases).
//
// Bundle manifest: {"family": "var", "architecture": {"var": VarConfig},
// "tokenizer": VqvaeConfig, "files": {"weights": ...}, ...} (io/model_bundle.h).
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/models/var/var_transformer.h"

namespace kvs::io {
class SafetensorsReader;
}

namespace kvs::var {

struct VarModel {
  std::string name;
  std::vector<std::string> class_names;
  std::unique_ptr<VarTransformer> transformer;
  std::unique_ptr<MultiScaleVqvae> vqvae;

  // Strictly checks every tensor (missing, unexpected, shape, dtype) before
  // building; recomputed buffers may be present and are shape-checked.
  static VarModel from_weights(const VarConfig& var_config, const VqvaeConfig& vae_config,
                               const io::SafetensorsReader& weights, at::Device device,
                               at::ScalarType dtype = at::kFloat);
  // `dtype`: the run-time dtype weights and caches are kept in (float32 for
  // conformance and training); each part keeps its numerically sensitive steps in float32.
  static VarModel load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype = at::kFloat);

  int64_t image_size() const { return vqvae->config().image_size(); }
};

// Bundle manifest sections for a VAR model.
nlohmann::json var_manifest(const std::string& name, const VarConfig& var, const VqvaeConfig& vae,
                            const nlohmann::json& provenance);

}  // namespace kvs::var
