#pragma once
// The evaluation classifier: a small CNN that recognises the procedural world's
// scene classes. It only judges models (class accuracy of generated images, and
// the demo-FID on its penultimate features); it is never part of generation.
//
// Architecture (ours, no upstream): per stage two 3x3 convs, each followed by
// GroupNorm and SiLU, then 2x2 average pooling (not after the last stage); global
// average pooling gives the penultimate features; one linear layer gives logits.
// Input as the tokenizer's: float32 NCHW in [-1, 1].
//
// The class takes its weights as a name -> tensor map and keeps float32 tensors
// as given, so the trainer runs this very forward on trainable tensors.
#include <nlohmann/json_fwd.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"

namespace kvs {

namespace io {
struct ModelBundle;
}

struct ClassifierConfig {
  int64_t num_classes = 10;
  int64_t image_size = 64;
  std::vector<int64_t> channels{32, 64, 128, 128};
  int64_t norm_groups = 8;

  int64_t feature_dim() const { return channels.back(); }
  void validate() const;
};

nlohmann::json to_json(const ClassifierConfig& c);
ClassifierConfig classifier_config_from_json(const nlohmann::json& j);
std::vector<io::ExpectedTensor> classifier_expected_tensors(const ClassifierConfig& c);

class SceneClassifier {
 public:
  SceneClassifier(ClassifierConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device);

  struct Output {
    at::Tensor logits;    // [B, num_classes]
    at::Tensor features;  // [B, feature_dim] (penultimate)
  };
  Output forward(const at::Tensor& images) const;
  // uint8 [N, H, W, 3] images, in batches without autograd; results on the CPU.
  Output classify_u8(const at::Tensor& pixels_nhwc, int64_t batch_size = 100) const;

  const ClassifierConfig& config() const { return config_; }
  at::Device device() const { return device_; }

  // A classifier file: the tensors plus metadata {"kvstudio": "scene-classifier", "config": JSON}.
  static SceneClassifier load(const std::string& path, at::Device device);

 private:
  const at::Tensor& w(const std::string& name) const;

  ClassifierConfig config_;
  at::Device device_;
  std::map<std::string, at::Tensor> weights_;
};

// Writes a classifier file (weights converted to `dtype`: at::kFloat or at::kHalf).
void save_classifier(const std::string& path, const ClassifierConfig& config,
                     const std::map<std::string, at::Tensor>& weights, at::ScalarType dtype = at::kFloat);

// Trained bundles name their evaluation classifier in
// files.evaluation_classifier: "evaluation-classifier.safetensors" inside the
// bundle (kvstudio-train export copies it there), or {"shared":
// "evaluation-classifier.safetensors"} for the shipped demo bundles, which share
// one copy in resources/models/shared (io::bundle_file_path). The
// benchmark and `kvstudio-train evaluate` use it. nullopt: the bundle has none;
// FileError: a shared classifier that is not where the bundle says.
constexpr const char* kEvaluationClassifierFile = "evaluation-classifier.safetensors";
std::optional<std::string> evaluation_classifier_path(const io::ModelBundle& bundle);

// Fraction of rows whose arg-max logit equals the label.
double accuracy(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace kvs
