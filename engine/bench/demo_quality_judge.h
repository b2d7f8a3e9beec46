#pragma once
// Quality in miniature: the way the papers compare policies on FID,
// `bench` compares them on the demo models with the bundle's own evaluation
// classifier (engine/metrics/scene_classifier.h):
//   class_accuracy  fraction of a policy's images whose arg-max class is the class
//                   they were generated for;
//   demo_fid        Fréchet distance (engine/metrics/frechet_distance.h) between the
//                   classifier's penultimate features of the policy's images and of
//                   held-out procedural-world images.
// Torch-free header.
//
// Choices:
// - Only bundles that ship an evaluation classifier (files.evaluation_classifier,
//   written by `kvstudio-train export`) are judged; for the others (random weights,
//   converted official checkpoints) for_bundle() returns null and bench reports
//   the fields as null.
// - The held-out set matches the judged images' classes: a class judged n times
//   gets n * k held-out images (k = ceil(min_reference / N) for N judged images),
//   so demo_fid measures quality, not the bench's class mix. Held-out seeds are the
//   training tool's held-out range (kvs::world::kHeldOutSeedBase), never trained on.
// - With few images demo_fid is biased upwards (FID always is); every policy of one
//   bench is judged on the same N and the same held-out set, so the comparison
//   between policies is fair. It needs N >= 2 (NaN otherwise).
// - The classifier runs on the CPU whatever device generated the images: it is
//   small, and its numbers then do not depend on the GPU's kernels.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/bench/feature_sums.h"
#include "engine/image/rgb_image.h"

namespace kvs {

namespace io {
struct ModelBundle;
}

class DemoQualityJudge {
 public:
  struct Score {
    double class_accuracy = 0;  // fraction in [0, 1]
    double demo_fid = 0;        // NaN when fewer than 2 images
  };

  // Null when the bundle has no evaluation classifier. `labels` are the classes the
  // images will be generated for (fixes the held-out set). Throws kvs::Error
  // subclasses for a broken classifier file or one that does not fit the model.
  static std::unique_ptr<DemoQualityJudge> for_bundle(const std::string& bundle_dir, const std::vector<int64_t>& labels,
                                                      int image_size, int64_t min_reference = 200);
  // The same for a bundle already open.
  static std::unique_ptr<DemoQualityJudge> for_bundle(const io::ModelBundle& bundle, const std::vector<int64_t>& labels,
                                                      int image_size, int64_t min_reference = 200);
  ~DemoQualityJudge();
  DemoQualityJudge(const DemoQualityJudge&) = delete;
  DemoQualityJudge& operator=(const DemoQualityJudge&) = delete;

  // images[i] was generated for labels[i] (the labels given to for_bundle).
  Score score(const std::vector<RgbImage>& images) const;
  int64_t reference_images() const;

  // Image by image, for bench's per-image results: the class the classifier
  // sees in each image and its penultimate features (row-major, one row of
  // feature_dim floats per image). Images of any class; the labels are not read.
  struct Judgement {
    std::vector<int64_t> predicted;
    std::vector<float> features;
    int64_t feature_dim = 0;
  };
  Judgement judge(const std::vector<RgbImage>& images) const;
  // The held-out images' features as summed statistics (count 0 when there are
  // none), for demo_fid_from_sums.
  const FeatureSums& reference_sums() const;

 private:
  struct Impl;
  explicit DemoQualityJudge(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// demo-FID from summed statistics: the Gaussians' means and unbiased
// covariances are sum / n and (outer - n mean mean^T) / (n - 1), computed in
// float64. NaN when either set has fewer than 2 vectors. Throws
// InvalidArgumentError when the feature sizes differ.
double demo_fid_from_sums(const FeatureSums& images, const FeatureSums& reference);

}  // namespace kvs
