#pragma once
// The model families kvstudio-train makes demo models of, one line each
// (trainable_families.cpp): how a work folder becomes a bundle, which sampling
// defaults and export options the bundle takes, and how `evaluate` opens a bundle
// of the family (with the tokenizer round trip it measures). A family without a
// trained demo model needs no line here.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/training/bundle_files.h"

namespace kvs::io {
struct ModelBundle;
}

namespace kvs::training {

// A bundle opened for `evaluate`: class count, image size, and the tokenizer
// round trip (the training encoder from the work folder -> the bundle's decoder).
struct EvaluationModel {
  int64_t classes = 0;
  int image_size = 0;
  std::function<double(const at::Tensor& pixels_nhwc)> tokenizer_psnr;
  // Text-to-image: generated from captions of held-out pictures, not class ids.
  bool text_conditioned = false;
  std::shared_ptr<void> keep_alive;  // the loaded model the functions use
};

struct TrainableFamily {
  std::string name;  // the model family (FamilyDescription::name)
  // The sampling defaults an exported bundle records, keyed as model.json's
  // "sampling_defaults"; `export` options override them one key each.
  nlohmann::json sampling_defaults;
  // `export` options beyond the common ones that the family's exporter reads.
  std::vector<std::string> export_options;
  std::function<nlohmann::json(const BundleExportOptions&)> export_bundle;
  std::function<EvaluationModel(const io::ModelBundle&, const std::string& work_dir, c10::Device)> load_for_evaluation;
};

const std::vector<TrainableFamily>& trainable_families();
// Throws InvalidArgumentError naming the families that can be trained.
const TrainableFamily& find_trainable_family(const std::string& name);

}  // namespace kvs::training
