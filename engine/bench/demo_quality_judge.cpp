#include "engine/bench/demo_quality_judge.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>
#include <map>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/frechet_distance.h"
#include "engine/metrics/image_tensors.h"
#include "engine/metrics/scene_classifier.h"
#include "engine/world/scene_world.h"

namespace kvs {

struct DemoQualityJudge::Impl {
  std::unique_ptr<SceneClassifier> classifier;
  std::vector<int64_t> labels;
  FeatureStats reference;
  FeatureSums reference_sums;
  int64_t reference_count = 0;
  int image_size = 0;
};

DemoQualityJudge::DemoQualityJudge(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DemoQualityJudge::~DemoQualityJudge() = default;

std::unique_ptr<DemoQualityJudge> DemoQualityJudge::for_bundle(const std::string& bundle_dir,
                                                               const std::vector<int64_t>& labels, int image_size,
                                                               int64_t min_reference) {
  return for_bundle(io::ModelBundle::open(bundle_dir), labels, image_size, min_reference);
}

std::unique_ptr<DemoQualityJudge> DemoQualityJudge::for_bundle(const io::ModelBundle& bundle,
                                                               const std::vector<int64_t>& labels, int image_size,
                                                               int64_t min_reference) {
  const auto path = evaluation_classifier_path(bundle);
  if (!path) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->classifier = std::make_unique<SceneClassifier>(SceneClassifier::load(*path, at::Device(at::kCPU)));
  const ClassifierConfig& cc = impl->classifier->config();
  if (cc.image_size != image_size)
    throw ModelMismatchError("evaluation classifier " + *path + " judges " + std::to_string(cc.image_size) +
                             " px images, the model makes " + std::to_string(image_size) + " px");
  const int64_t world_classes = static_cast<int64_t>(world::scene_classes().size());
  if (cc.num_classes != world_classes)
    throw ModelMismatchError("evaluation classifier " + *path + " has " + std::to_string(cc.num_classes) +
                             " classes, the procedural world " + std::to_string(world_classes));
  for (int64_t c : labels)
    if (c < 0 || c >= cc.num_classes)
      throw InvalidArgumentError("class " + std::to_string(c) + " is not a class of the evaluation classifier");
  impl->labels = labels;
  impl->image_size = image_size;

  // Held-out images with the judged images' class mix (see the header).
  const int64_t n = static_cast<int64_t>(labels.size());
  if (n > 0) {
    const int64_t k = std::max<int64_t>(1, (min_reference + n - 1) / n);
    std::map<int64_t, int64_t> per_class;
    for (int64_t c : labels) per_class[c] += k;
    std::vector<RgbImage> held_out;
    for (const auto& [c, count] : per_class)
      for (int64_t j = 0; j < count; ++j)
        held_out.push_back(
            world::render_scene(static_cast<int>(c), world::kHeldOutSeedBase + static_cast<uint64_t>(j), image_size));
    impl->reference_count = static_cast<int64_t>(held_out.size());
    if (impl->reference_count >= 2) {
      const at::Tensor features = impl->classifier->classify_u8(rgb_images_to_tensor(held_out)).features;
      impl->reference = feature_stats(features);
      const at::Tensor rows = features.detach().to(at::kCPU, at::kFloat).contiguous();
      impl->reference_sums.add_rows(rows.data_ptr<float>(), rows.size(0), rows.size(1));
    }
  }
  return std::unique_ptr<DemoQualityJudge>(new DemoQualityJudge(std::move(impl)));
}

DemoQualityJudge::Score DemoQualityJudge::score(const std::vector<RgbImage>& images) const {
  if (images.size() != impl_->labels.size())
    throw InvalidArgumentError("quality judge: " + std::to_string(images.size()) + " images for " +
                               std::to_string(impl_->labels.size()) + " labels");
  Score s;
  if (images.empty()) return s;
  for (const auto& im : images)
    if (im.width != impl_->image_size || im.height != impl_->image_size)
      throw InvalidArgumentError("quality judge: a " + std::to_string(im.width) + "x" + std::to_string(im.height) +
                                 " image, expected " + std::to_string(impl_->image_size) + " px");
  const SceneClassifier::Output out = impl_->classifier->classify_u8(rgb_images_to_tensor(images));
  s.class_accuracy = accuracy(out.logits, at::tensor(impl_->labels, at::TensorOptions().dtype(at::kLong)));
  s.demo_fid = images.size() >= 2 && impl_->reference_count >= 2
                   ? frechet_distance(feature_stats(out.features), impl_->reference)
                   : std::numeric_limits<double>::quiet_NaN();
  return s;
}

int64_t DemoQualityJudge::reference_images() const { return impl_->reference_count; }

DemoQualityJudge::Judgement DemoQualityJudge::judge(const std::vector<RgbImage>& images) const {
  Judgement j;
  if (images.empty()) return j;
  for (const auto& im : images)
    if (im.width != impl_->image_size || im.height != impl_->image_size)
      throw InvalidArgumentError("quality judge: a " + std::to_string(im.width) + "x" + std::to_string(im.height) +
                                 " image, expected " + std::to_string(impl_->image_size) + " px");
  const SceneClassifier::Output out = impl_->classifier->classify_u8(rgb_images_to_tensor(images));
  const at::Tensor predicted = out.logits.argmax(1).to(at::kCPU, at::kLong).contiguous();
  j.predicted.assign(predicted.data_ptr<int64_t>(), predicted.data_ptr<int64_t>() + predicted.numel());
  const at::Tensor rows = out.features.detach().to(at::kCPU, at::kFloat).contiguous();
  j.feature_dim = rows.size(1);
  j.features.assign(rows.data_ptr<float>(), rows.data_ptr<float>() + rows.numel());
  return j;
}

const FeatureSums& DemoQualityJudge::reference_sums() const { return impl_->reference_sums; }

double demo_fid_from_sums(const FeatureSums& images, const FeatureSums& reference) {
  if (images.count < 2 || reference.count < 2) return std::numeric_limits<double>::quiet_NaN();
  if (images.dim != reference.dim)
    throw InvalidArgumentError("demo-FID: feature sizes differ (" + std::to_string(images.dim) + " vs " +
                               std::to_string(reference.dim) + ")");
  auto stats = [](const FeatureSums& s) {
    const auto options = at::TensorOptions().dtype(at::kDouble);
    const at::Tensor sum = at::tensor(s.sum_values(), options);
    const at::Tensor outer = at::tensor(s.outer_values(), options).view({s.dim, s.dim});
    const double n = static_cast<double>(s.count);
    FeatureStats f;
    f.count = s.count;
    f.mean = sum / n;
    f.cov = (outer - at::outer(f.mean, f.mean) * n) / (n - 1.0);
    return f;
  };
  return frechet_distance(stats(images), stats(reference));
}

}  // namespace kvs
