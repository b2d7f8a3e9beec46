#pragma once
// What every family's bundle export shares: the options, the weight dtype, copying
// checkpoint tensors under the bundle's prefix, the run summaries that go into
// provenance, and the evaluation classifier that travels with a trained bundle
// (files.evaluation_classifier) for `kvstudio-train evaluate` and the benchmark.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "engine/io/bundle_weights.h"

namespace kvs::training {

struct BundleExportOptions {
  std::string work_dir;
  std::string out_dir;
  std::string name = "llamagen-demo";
  std::string dtype = "f16";  // f32 | f16 | bf16
  nlohmann::json sampling_defaults = {{"cfg_scale", 4.0}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}};
  // Evaluation classifier: WORK/classifier when it holds a checkpoint, else this
  // classifier file when given (e.g. another demo bundle's), else none.
  std::string classifier_file;
  // Name classifier_file as a shared file ({"shared": NAME}, io::bundle_file_path)
  // instead of copying it into the bundle: it must be in the folder "shared" beside
  // OUT (how the demo bundles in resources/models share one classifier).
  bool shared_classifier = false;
  std::string command;  // recorded in provenance
  // MAR: ship the EMA weights when the run kept them (as the converter takes
  // "model_ema"), and the diffusion head's sampling respacing ("" = the run's config).
  bool use_ema = true;
  std::string diffusion_steps;
};

// The weight type and the prefixed tensor list are the same as every bundle
// writer's (engine/io/bundle_weights.h).
using io::add_prefixed;
using io::parse_weights_dtype;

// Steps, seed, batch, lr, time, config and commands of a training checkpoint manifest.
nlohmann::json run_summary(const nlohmann::json& checkpoint_manifest);

// A model run records the tokenizer checkpoint it was trained on (`trained_on`,
// the tokenizer run's "weights" file name); its tokens mean nothing with another.
// Throws InvalidArgumentError when `tokenizer_manifest` (the tokenizer run's
// checkpoint manifest) now names another checkpoint: "folder MODEL_DIR: <model>
// was trained on <checkpoint_kind> checkpoint 'X', but TOKENIZER_DIR now holds
// 'Y'; retrain <model> (or restore that <restore_kind>)".
void require_trained_on_tokenizer(const std::string& trained_on, const nlohmann::json& tokenizer_manifest,
                                  const std::string& model_dir, const std::string& tokenizer_dir,
                                  const std::string& model, const std::string& checkpoint_kind,
                                  const std::string& restore_kind);

// The world provenance block (image size, training and held-out seed ranges).
nlohmann::json world_provenance(int image_size);

// Writes OUT/evaluation-classifier.safetensors as BundleExportOptions says and
// records it in `manifest` (files + provenance), or with shared_classifier
// records the shared classifier file without copying it (InvalidArgumentError
// when it is not in OUT/../shared). Call after creating OUT.
void attach_evaluation_classifier(const BundleExportOptions& options, at::ScalarType dtype, nlohmann::json& manifest);

// The world's class names, checked against the model's class count
// (ModelMismatchError: "the <model_kind> has N classes but the world has M").
std::vector<std::string> checked_world_class_names(int64_t model_classes, const std::string& model_kind);

// Provenance of a bundle trained on the world: source, `created_by`, the export
// command, weights dtype, the world block, and the two training runs (the
// tokenizer's as "tokenizer_training", the model's under `model_key`).
nlohmann::json trained_provenance(const BundleExportOptions& options, const std::string& created_by, int image_size,
                                  const nlohmann::json& tokenizer_manifest, const std::string& model_key,
                                  const nlohmann::json& model_manifest);

// Completes `manifest` (class names, sampling defaults, evaluation classifier) and
// writes the bundle folder: weights.safetensors and model.json (io::write_bundle).
// The caller then loads it through its family's strict loader.
void write_trained_bundle(const BundleExportOptions& options, at::ScalarType dtype, const io::NamedTensors& tensors,
                          const std::vector<std::string>& class_names, nlohmann::json& manifest);

}  // namespace kvs::training
