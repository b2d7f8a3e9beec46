#pragma once
// Turns a training work folder (WORK/vq, WORK/gpt, optionally WORK/classifier)
// into a model bundle of the same format as converted official checkpoints
// (model.json + weights.safetensors with "gpt." and "vq." tensors; the encoder is
// dropped, as the converter drops it), so the demo model runs through exactly the
// code path real checkpoints use. The evaluation classifier travels along as
// evaluation-classifier.safetensors (files.evaluation_classifier) for
// `kvstudio-train evaluate` and the benchmark's class accuracy / demo-FID.
#include <nlohmann/json.hpp>

#include <string>

namespace kvs::training {

struct BundleExportOptions {
  std::string work_dir;
  std::string out_dir;
  std::string name = "llamagen-demo";
  std::string dtype = "f16";  // f32 | f16 | bf16
  nlohmann::json sampling_defaults = {{"cfg_scale", 4.0}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}};
  std::string command;        // recorded in provenance
};

// Returns the manifest written to OUT/model.json.
nlohmann::json export_llamagen_bundle(const BundleExportOptions& options);

}  // namespace kvs::training
