#pragma once
// Turns a VAR training work folder (WORK/var-vae, WORK/var, optionally
// WORK/classifier) into a model bundle of the same format as a converted official
// VAR checkpoint (`kvstudio-cli convert --family var`): model.json with
// architecture.var and tokenizer in upstream constructor spelling, and
// weights.safetensors with "var." and "vae." tensors under the official names
// (the encoder, quant_conv and the usage buffer are dropped, as the converter
// drops them), so the demo runs through exactly the code path real VAR
// checkpoints use.
#include <nlohmann/json.hpp>

#include "engine/training/bundle_files.h"

namespace kvs::training {

// Returns the manifest written to OUT/model.json (the bundle is loaded back
// through var::VarModel::load before returning).
nlohmann::json export_var_bundle(const BundleExportOptions& options);

}  // namespace kvs::training
