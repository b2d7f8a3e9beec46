#pragma once
// Turns a training work folder (WORK/vq, WORK/gpt, optionally WORK/classifier)
// into a model bundle of the same format as converted official checkpoints
// (model.json + weights.safetensors with "gpt." and "vq." tensors, and the
// tokenizer's encoder half beside them as files.vq_encoder, which finishing a
// picture encodes with), so the demo model runs through exactly the code path
// real checkpoints use. The evaluation classifier travels along as
// evaluation-classifier.safetensors (files.evaluation_classifier) for
// `kvstudio-train evaluate` and the benchmark's class accuracy / demo-FID.
#include <nlohmann/json.hpp>

#include "engine/training/bundle_files.h"

namespace kvs::training {

// Returns the manifest written to OUT/model.json.
nlohmann::json export_llamagen_bundle(const BundleExportOptions& options);

// Writes the encoder that WORK/vq fitted to a bundle's frozen decoder
// (`kvstudio-train vq --decoder-from BUNDLE`) into that bundle (files.vq_encoder,
// in `dtype`), leaving its other files alone. Refuses an encoder fitted to
// another decoder (the run records the decoder's fingerprint). Returns the
// encoder's tensor count.
int64_t export_vq_encoder_into_bundle(const std::string& work_dir, const std::string& bundle_dir,
                                      const std::string& dtype);

}  // namespace kvs::training
