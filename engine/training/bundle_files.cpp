#include "engine/training/bundle_files.h"

#include <ATen/Functions.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_manifest.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/scene_classifier.h"
#include "engine/training/checkpoint.h"
#include "engine/training/world_dataset.h"

namespace kvs::training {
namespace fs = std::filesystem;

nlohmann::json run_summary(const nlohmann::json& manifest) {
  return {{"steps", manifest.value("step", 0)},
          {"seed", manifest.value("seed", 0)},
          {"batch", manifest.value("batch", 0)},
          {"lr", manifest.value("lr", 0.0)},
          {"train_seconds", manifest.value("train_seconds", 0.0)},
          {"config", manifest.value("config", nlohmann::json::object())},
          {"commands", manifest.value("commands", nlohmann::json::array())}};
}

nlohmann::json world_provenance(int image_size) {
  return {{"image_size", image_size},
          {"training_seeds", seed_range_text(0, kHeldOutSeedBase)},
          {"held_out_seeds", seed_range_text(kHeldOutSeedBase, 2 * kHeldOutSeedBase)}};
}

void attach_evaluation_classifier(const BundleExportOptions& options, at::ScalarType dtype, nlohmann::json& manifest) {
  const std::string classifier_dir = (fs::path(options.work_dir) / "classifier").string();
  const std::string out = (fs::path(options.out_dir) / kEvaluationClassifierFile).string();
  if (options.shared_classifier) {
    if (options.classifier_file.empty())
      throw InvalidArgumentError("option --shared-classifier needs --classifier FILE (in the folder \"" +
                                 std::string(io::kSharedBundleFilesFolder) + "\" beside the bundle folder)");
    SceneClassifier::load(options.classifier_file, at::kCPU);  // must be a classifier file
    // The folder the loader will look in (io::bundle_file_path).
    const fs::path bundle_dir = fs::absolute(fs::path(options.out_dir) / "model.json").lexically_normal().parent_path();
    const fs::path shared_dir = bundle_dir.parent_path() / io::kSharedBundleFilesFolder;
    const fs::path file = fs::absolute(options.classifier_file).lexically_normal();
    std::error_code ec;
    if (!fs::equivalent(file.parent_path(), shared_dir, ec))
      throw InvalidArgumentError("option --shared-classifier: " + options.classifier_file + " is not in " +
                                 shared_dir.string() + ", the folder \"" + io::kSharedBundleFilesFolder +
                                 "\" beside the bundle folder where the bundle will look for it");
    manifest["provenance"]["classifier_source"] = options.classifier_file;
    manifest["files"]["evaluation_classifier"] = {{"shared", file.filename().string()}};
    return;
  }
  if (read_checkpoint_manifest(classifier_dir)) {
    nlohmann::json cls_manifest;
    const auto cls_weights = load_checkpoint_weights(classifier_dir, &cls_manifest);
    const ClassifierConfig cls_cfg = classifier_config_from_json(cls_manifest.at("config").at("model"));
    save_classifier(out, cls_cfg, cls_weights, dtype == at::kFloat ? at::kFloat : at::kHalf);
    manifest["provenance"]["classifier_training"] = run_summary(cls_manifest);
  } else if (!options.classifier_file.empty()) {
    SceneClassifier::load(options.classifier_file, at::kCPU);  // must be a classifier file
    std::error_code ec;
    if (fs::absolute(options.classifier_file, ec) != fs::absolute(out, ec))
      fs::copy_file(options.classifier_file, out, fs::copy_options::overwrite_existing, ec);
    if (ec) throw FileError("file " + options.classifier_file + ": cannot copy into the bundle (" + ec.message() + ")");
    manifest["provenance"]["classifier_source"] = options.classifier_file;
  } else {
    return;
  }
  manifest["files"]["evaluation_classifier"] = kEvaluationClassifierFile;
}

void require_trained_on_tokenizer(const std::string& trained_on, const nlohmann::json& tokenizer_manifest,
                                  const std::string& model_dir, const std::string& tokenizer_dir,
                                  const std::string& model, const std::string& checkpoint_kind,
                                  const std::string& restore_kind) {
  const std::string holds = tokenizer_manifest.value("weights", std::string());
  if (trained_on != holds)
    throw InvalidArgumentError("folder " + model_dir + ": " + model + " was trained on " + checkpoint_kind +
                               " checkpoint '" + trained_on + "', but " + tokenizer_dir + " now holds '" + holds +
                               "'; retrain " + model + " (or restore that " + restore_kind + ")");
}

std::vector<std::string> checked_world_class_names(int64_t model_classes, const std::string& model_kind) {
  std::vector<std::string> class_names = world_class_names();
  if (static_cast<int64_t>(class_names.size()) != model_classes)
    throw ModelMismatchError("the " + model_kind + " has " + std::to_string(model_classes) +
                             " classes but the world has " + std::to_string(class_names.size()));
  return class_names;
}

nlohmann::json trained_provenance(const BundleExportOptions& options, const std::string& created_by, int image_size,
                                  const nlohmann::json& tokenizer_manifest, const std::string& model_key,
                                  const nlohmann::json& model_manifest) {
  return {{"source", "trained from scratch by kvstudio-train on the procedural world (engine/world)"},
          {"created_by", created_by},
          {"export_command", options.command},
          {"weights_dtype", options.dtype},
          {"world", world_provenance(image_size)},
          {"tokenizer_training", run_summary(tokenizer_manifest)},
          {model_key, run_summary(model_manifest)}};
}

void write_trained_bundle(const BundleExportOptions& options, at::ScalarType dtype, const io::NamedTensors& tensors,
                          const std::vector<std::string>& class_names, nlohmann::json& manifest) {
  manifest["class_names"] = class_names;
  manifest["sampling_defaults"] = options.sampling_defaults;
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) throw FileError("folder " + options.out_dir + ": cannot create (" + ec.message() + ")");
  attach_evaluation_classifier(options, dtype, manifest);
  io::write_bundle(options.out_dir, manifest, tensors);
}

}  // namespace kvs::training
