#pragma once
// Turns a MAR training work folder (WORK/kl-vae, WORK/mar, optionally
// WORK/classifier) into a model bundle of the same format as a converted official
// MAR checkpoint (`kvstudio-cli convert --family mar`): model.json with
// architecture.mar and tokenizer in upstream constructor spelling (tokenizer.
// latent_scale = the scale the MAR run measured and trained with), and
// weights.safetensors with "mar." (the EMA weights when the run kept them, as the
// converter takes model_ema) and "vae." tensors (post_quant_conv and the decoder;
// the encoder and quant_conv are dropped, as the converter drops them), so the demo
// runs through exactly the code path real MAR checkpoints use.
#include <nlohmann/json.hpp>

#include "engine/training/bundle_files.h"

namespace kvs::training {

// Returns the manifest written to OUT/model.json (the bundle is loaded back
// through mar::MarModel::load before returning).
nlohmann::json export_mar_bundle(const BundleExportOptions& options);

}  // namespace kvs::training
