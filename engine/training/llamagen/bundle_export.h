#pragma once
// Turns a training work folder (WORK/vq, WORK/gpt, optionally WORK/classifier)
// into a model bundle of the same format as converted official checkpoints
// (model.json + weights.safetensors with "gpt." and "vq." tensors; the encoder is
// dropped, as the converter drops it), so the demo model runs through exactly the
// code path real checkpoints use. The evaluation classifier travels along as
// evaluation-classifier.safetensors (files.evaluation_classifier) for
// `kvstudio-train evaluate` and the benchmark's class accuracy / demo-FID.
#include <nlohmann/json.hpp>

#include "engine/training/bundle_files.h"

namespace kvs::training {

// Returns the manifest written to OUT/model.json.
nlohmann::json export_llamagen_bundle(const BundleExportOptions& options);

}  // namespace kvs::training
