#include "engine/metrics/scene_classifier.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include "engine/core/errors.h"
#include "engine/io/bundle_file_path.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/metrics/image_tensors.h"

namespace kvs {

void ClassifierConfig::validate() const {
  if (num_classes < 2) throw InvalidArgumentError("classifier: num_classes must be at least 2");
  if (channels.empty()) throw InvalidArgumentError("classifier: channels must not be empty");
  for (int64_t c : channels)
    if (c < 1 || c % norm_groups != 0)
      throw InvalidArgumentError("classifier: every channel count must be a positive multiple of norm_groups (" +
                                 std::to_string(norm_groups) + ")");
  if (image_size % (int64_t{1} << (channels.size() - 1)) != 0)
    throw InvalidArgumentError("classifier: image_size must be divisible by 2^(stages - 1)");
}

nlohmann::json to_json(const ClassifierConfig& c) {
  return {{"num_classes", c.num_classes},
          {"image_size", c.image_size},
          {"channels", c.channels},
          {"norm_groups", c.norm_groups}};
}

ClassifierConfig classifier_config_from_json(const nlohmann::json& j) {
  ClassifierConfig c;
  try {
    c.num_classes = j.at("num_classes").get<int64_t>();
    c.image_size = j.at("image_size").get<int64_t>();
    c.channels = j.at("channels").get<std::vector<int64_t>>();
    c.norm_groups = j.at("norm_groups").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("classifier config: ") + e.what());
  }
  c.validate();
  return c;
}

std::vector<io::ExpectedTensor> classifier_expected_tensors(const ClassifierConfig& c) {
  std::vector<io::ExpectedTensor> out;
  int64_t in = 3;
  for (size_t i = 0; i < c.channels.size(); ++i) {
    const std::string p = "stages." + std::to_string(i) + ".";
    const int64_t ch = c.channels[i];
    out.push_back({p + "conv1.weight", {ch, in, 3, 3}});
    out.push_back({p + "conv1.bias", {ch}});
    out.push_back({p + "norm1.weight", {ch}});
    out.push_back({p + "norm1.bias", {ch}});
    out.push_back({p + "conv2.weight", {ch, ch, 3, 3}});
    out.push_back({p + "conv2.bias", {ch}});
    out.push_back({p + "norm2.weight", {ch}});
    out.push_back({p + "norm2.bias", {ch}});
    in = ch;
  }
  out.push_back({"head.weight", {c.num_classes, in}});
  out.push_back({"head.bias", {c.num_classes}});
  return out;
}

SceneClassifier::SceneClassifier(ClassifierConfig config, const std::map<std::string, at::Tensor>& weights,
                                 at::Device device)
    : config_(std::move(config)), device_(device) {
  config_.validate();
  io::ShapeMap shapes;
  for (const auto& [name, t] : weights) shapes[name] = t.sizes().vec();
  io::check_tensor_set(shapes, classifier_expected_tensors(config_), "scene classifier");
  for (const auto& [name, t] : weights) weights_[name] = t.to(device, at::kFloat).contiguous();
}

const at::Tensor& SceneClassifier::w(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) throw ModelMismatchError("scene classifier: missing tensor " + name);
  return it->second;
}

SceneClassifier::Output SceneClassifier::forward(const at::Tensor& images) const {
  at::Tensor h = images.to(device_, at::kFloat);
  const size_t stages = config_.channels.size();
  for (size_t i = 0; i < stages; ++i) {
    const std::string p = "stages." + std::to_string(i) + ".";
    for (const char* k : {"1", "2"}) {
      h = at::conv2d(h, w(p + "conv" + k + ".weight"), w(p + "conv" + k + ".bias"), {1, 1}, {1, 1});
      h = at::silu(
          at::group_norm(h, config_.norm_groups, w(p + "norm" + k + ".weight"), w(p + "norm" + k + ".bias"), 1e-5));
    }
    if (i + 1 < stages) h = at::avg_pool2d(h, {2, 2});
  }
  Output out;
  out.features = h.mean({2, 3});
  out.logits = at::linear(out.features, w("head.weight"), w("head.bias"));
  return out;
}

SceneClassifier::Output SceneClassifier::classify_u8(const at::Tensor& pixels_nhwc, int64_t batch_size) const {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> logits, features;
  const int64_t n = pixels_nhwc.size(0);
  for (int64_t i = 0; i < n; i += batch_size) {
    const int64_t len = std::min(batch_size, n - i);
    Output o = forward(u8_images_to_input(pixels_nhwc.narrow(0, i, len), device_));
    logits.push_back(o.logits.to(at::kCPU));
    features.push_back(o.features.to(at::kCPU));
  }
  Output out;
  out.logits = logits.empty() ? at::empty({0, config_.num_classes}) : at::cat(logits);
  out.features = features.empty() ? at::empty({0, config_.feature_dim()}) : at::cat(features);
  return out;
}

SceneClassifier SceneClassifier::load(const std::string& path, at::Device device) {
  // Owned copies: the classifier stays loaded while bundles change on disk.
  auto reader = io::SafetensorsReader::open(path, io::TensorMemory::OwnedCopy);
  const auto& meta = reader->index().metadata;
  auto kind = meta.find("kvstudio");
  auto config = meta.find("config");
  if (kind == meta.end() || kind->second != "scene-classifier" || config == meta.end())
    throw FormatError("file " + path + ": not a KV Studio scene classifier (metadata kvstudio/config missing)");
  ClassifierConfig c;
  try {
    c = classifier_config_from_json(nlohmann::json::parse(config->second));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + path + ": classifier config is not valid JSON (" + e.what() + ")");
  }
  std::map<std::string, at::Tensor> weights;
  for (const auto& name : reader->names()) weights[name] = reader->tensor(name);
  return SceneClassifier(c, weights, device);
}

void save_classifier(const std::string& path, const ClassifierConfig& config,
                     const std::map<std::string, at::Tensor>& weights, at::ScalarType dtype) {
  io::NamedTensors tensors;
  for (const auto& e : classifier_expected_tensors(config)) {
    auto it = weights.find(e.name);
    if (it == weights.end()) throw ModelMismatchError("scene classifier: missing tensor " + e.name);
    tensors.emplace_back(e.name, it->second.detach().to(at::kCPU, dtype));
  }
  io::write_safetensors(path, tensors, {{"kvstudio", "scene-classifier"}, {"config", to_json(config).dump()}});
}

std::optional<std::string> evaluation_classifier_path(const io::ModelBundle& bundle) {
  return io::bundle_file_path(bundle, "evaluation_classifier");
}

double accuracy(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.size(0) == 0) return 0.0;
  return logits.argmax(1).to(at::kCPU).eq(labels.to(at::kCPU, at::kLong)).to(at::kDouble).mean().item<double>();
}

}  // namespace kvs
