// Bench's quality in miniature: class accuracy and demo-FID measured with
// a bundle's evaluation classifier against held-out procedural-world images.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include "engine/bench/demo_quality_judge.h"
#include "engine/bench/policy_bench.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/image_tensors.h"
#include "engine/metrics/scene_classifier.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/training/bundle_files.h"
#include "engine/world/scene_world.h"
#include "tests/engine/test_helpers.h"

namespace kvs {
namespace {

constexpr int kImagePx = 16;  // 8x8 tokens through a 2x tokenizer

// A random LlamaGen bundle on the world's classes that ships a (random) evaluation classifier.
std::string judged_bundle(const test::TempDir& dir) {
  const std::string out = dir.file("bundle");
  llamagen::GptConfig gpt = test::tiny_gqa_gpt();
  gpt.num_classes = static_cast<int64_t>(world::scene_classes().size());
  gpt.block_size = 64;
  llamagen::write_random_llamagen_bundle(out, "judged", gpt, test::tiny_vq(), 3);
  ClassifierConfig cc;
  cc.num_classes = gpt.num_classes;
  cc.image_size = kImagePx;
  cc.channels = {8, 16};
  cc.norm_groups = 4;
  at::manual_seed(11);
  std::map<std::string, at::Tensor> weights;
  for (const auto& e : classifier_expected_tensors(cc)) weights[e.name] = at::randn(e.shape) * 0.3;
  save_classifier(dir.file("bundle/" + std::string(kEvaluationClassifierFile)), cc, weights);
  nlohmann::json manifest = io::ModelBundle::open(out).manifest;
  manifest["files"]["evaluation_classifier"] = kEvaluationClassifierFile;
  io::write_bundle_manifest(out, manifest);
  return out;
}

// Two runs of two images (or as asked) on one thread, no warm-up.
BenchOptions quick_bench(const std::string& model, std::vector<std::string> policies, int64_t images) {
  BenchOptions o;
  o.model_path = model;
  o.policies = std::move(policies);
  o.images = images;
  o.batch = 2;
  o.threads = 1;
  o.warmup = false;
  return o;
}

SceneClassifier::Output classify(const std::string& bundle, const std::vector<RgbImage>& images) {
  const auto path = evaluation_classifier_path(io::ModelBundle::open(bundle));
  return SceneClassifier::load(*path, at::kCPU).classify_u8(rgb_images_to_tensor(images));
}

TEST(DemoQualityJudge, HeldOutImagesScoreTheClassifierAccuracyAndZeroFid) {
  test::TempDir dir;
  const std::string bundle = judged_bundle(dir);
  const std::vector<int64_t> labels{0, 3, 0, 7};
  // min_reference = N: one held-out image per judged image, class 0 gets seeds base+0, base+1.
  const auto judge = DemoQualityJudge::for_bundle(bundle, labels, kImagePx, 4);
  ASSERT_NE(judge, nullptr);
  EXPECT_EQ(judge->reference_images(), 4);
  const uint64_t base = world::kHeldOutSeedBase;
  const std::vector<RgbImage> same{world::render_scene(0, base + 1, kImagePx), world::render_scene(3, base, kImagePx),
                                   world::render_scene(0, base, kImagePx), world::render_scene(7, base, kImagePx)};
  const DemoQualityJudge::Score s = judge->score(same);
  EXPECT_NEAR(s.demo_fid, 0.0, 1e-6);  // the held-out set itself, in another order
  const double expected = accuracy(classify(bundle, same).logits, at::tensor(labels));
  EXPECT_DOUBLE_EQ(s.class_accuracy, expected);

  // Other scenes move the features: demo-FID rises.
  const std::vector<RgbImage> other{world::render_scene(5, 1, kImagePx), world::render_scene(9, 2, kImagePx),
                                    world::render_scene(2, 3, kImagePx), world::render_scene(11, 4, kImagePx)};
  EXPECT_GT(judge->score(other).demo_fid, 1e-3);

  // A class count the classifier does not know, a wrong image size, a wrong image count.
  EXPECT_THROW(DemoQualityJudge::for_bundle(bundle, {99}, kImagePx), InvalidArgumentError);
  EXPECT_THROW(DemoQualityJudge::for_bundle(bundle, labels, 32), ModelMismatchError);
  EXPECT_THROW(judge->score({same[0]}), InvalidArgumentError);
  // One image: accuracy only.
  const auto single = DemoQualityJudge::for_bundle(bundle, {3}, kImagePx, 4);
  const DemoQualityJudge::Score one = single->score({same[1]});
  EXPECT_TRUE(std::isnan(one.demo_fid));
  EXPECT_EQ(single->reference_images(), 4);
}

TEST(DemoQualityJudge, BundlesWithoutClassifierAreNotJudged) {
  test::TempDir dir;
  llamagen::GptConfig gpt = test::tiny_gqa_gpt();
  gpt.block_size = 64;
  llamagen::write_random_llamagen_bundle(dir.file("plain"), "plain", gpt, test::tiny_vq(), 3);
  EXPECT_EQ(DemoQualityJudge::for_bundle(dir.file("plain"), {0, 1}, kImagePx), nullptr);

  const auto records = run_policy_bench(quick_bench(dir.file("plain"), {"streaming:rho=1/2"}, 2));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(std::isnan(records[1].class_accuracy));
  EXPECT_TRUE(to_json(records[1])["demo_fid"].is_null());
}

TEST(DemoQualityJudge, BenchJudgesEveryPolicy) {
  test::TempDir dir;
  const auto records = run_policy_bench(quick_bench(judged_bundle(dir), {"streaming:rho=1/4", "linear:rho=1/2"}, 4));
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_GE(r.class_accuracy, 0.0);
    EXPECT_LE(r.class_accuracy, 1.0);
    EXPECT_TRUE(std::isfinite(r.demo_fid)) << r.policy;
    EXPECT_GE(r.demo_fid, 0.0);
    EXPECT_EQ(r.quality_reference_images, 200);  // 4 images x ceil(200 / 4) held-out images each
    EXPECT_EQ(r.class_judged, 4);
    EXPECT_TRUE(std::isnan(r.attribute_accuracy));  // a class model asks for no attributes
    const auto j = to_json(r);
    EXPECT_TRUE(j["class_accuracy"].is_number());
    EXPECT_TRUE(j["demo_fid"].is_number());
  }
}

// The demo bundles in resources/models name one classifier file that they share,
// resources/models/shared/evaluation-classifier.safetensors.
TEST(SharedClassifier, ShippedDemoBundlesShareOneClassifier) {
  const std::filesystem::path models = std::filesystem::path(KVSTUDIO_SOURCE_DIR) / "resources/models";
  const std::string shared = (models / "shared" / kEvaluationClassifierFile).string();
  for (const char* name : {"llamagen-demo", "var-demo", "mar-demo", "janus-pro-demo"}) {
    const io::ModelBundle bundle = io::ModelBundle::open((models / name).string());
    EXPECT_EQ(evaluation_classifier_path(bundle), std::optional<std::string>(shared)) << name;
    EXPECT_FALSE(std::filesystem::exists(models / name / kEvaluationClassifierFile)) << name;
  }
  EXPECT_EQ(SceneClassifier::load(shared, at::kCPU).config().num_classes,
            static_cast<int64_t>(world::scene_classes().size()));
}

// A bundle whose classifier is shared judges with the file beside its folder;
// the same bundle copied elsewhere without that folder says where it looked.
TEST(SharedClassifier, IsFoundBesideTheBundleAndMissingIsNamed) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const std::string bundle = judged_bundle(dir);
  fs::create_directories(dir.file("shared"));
  fs::rename(dir.file("bundle/" + std::string(kEvaluationClassifierFile)),
             dir.file("shared/" + std::string(kEvaluationClassifierFile)));
  nlohmann::json manifest = io::ModelBundle::open(bundle).manifest;
  manifest["files"]["evaluation_classifier"] = {{"shared", kEvaluationClassifierFile}};
  io::write_bundle_manifest(bundle, manifest);
  EXPECT_EQ(evaluation_classifier_path(io::ModelBundle::open(bundle)),
            std::optional<std::string>(dir.file("shared/" + std::string(kEvaluationClassifierFile))));
  EXPECT_NE(DemoQualityJudge::for_bundle(bundle, {0, 3}, kImagePx, 2), nullptr);

  fs::create_directories(dir.file("elsewhere"));
  fs::copy(bundle, dir.file("elsewhere/bundle"), fs::copy_options::recursive);
  const io::ModelBundle moved = io::ModelBundle::open(dir.file("elsewhere/bundle"));
  try {
    evaluation_classifier_path(moved);
    ADD_FAILURE() << "a missing shared classifier was not reported";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("files.evaluation_classifier is the shared file "
                                         "evaluation-classifier.safetensors, which is not at " +
                                         dir.file("elsewhere/shared/evaluation-classifier.safetensors")),
              std::string::npos)
        << e.what();
  }
}

// kvstudio-train export --shared-classifier names the classifier as a shared
// file, without a copy, only when it is in the folder the loader looks in.
TEST(SharedClassifier, ExportNamesItOnlyFromTheSharedFolder) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const std::string source = judged_bundle(dir);  // its classifier is a valid classifier file
  fs::create_directories(dir.file("models/shared"));
  fs::copy_file(dir.file("bundle/" + std::string(kEvaluationClassifierFile)),
                dir.file("models/shared/" + std::string(kEvaluationClassifierFile)));
  training::BundleExportOptions o;
  o.work_dir = dir.file("no-work");
  o.out_dir = dir.file("models/demo");
  o.classifier_file = dir.file("models/shared/" + std::string(kEvaluationClassifierFile));
  o.shared_classifier = true;
  fs::create_directories(o.out_dir);
  nlohmann::json manifest;
  training::attach_evaluation_classifier(o, at::kFloat, manifest);
  EXPECT_EQ(manifest["files"]["evaluation_classifier"], nlohmann::json({{"shared", kEvaluationClassifierFile}}));
  EXPECT_FALSE(fs::exists(dir.file("models/demo/" + std::string(kEvaluationClassifierFile))));

  o.classifier_file = dir.file("bundle/" + std::string(kEvaluationClassifierFile));  // not in models/shared
  EXPECT_THROW(training::attach_evaluation_classifier(o, at::kFloat, manifest), InvalidArgumentError);
  o.classifier_file.clear();
  EXPECT_THROW(training::attach_evaluation_classifier(o, at::kFloat, manifest), InvalidArgumentError);
  // Without the option the classifier is copied: the bundle stands alone.
  o.shared_classifier = false;
  o.classifier_file = dir.file("models/shared/" + std::string(kEvaluationClassifierFile));
  training::attach_evaluation_classifier(o, at::kFloat, manifest);
  EXPECT_EQ(manifest["files"]["evaluation_classifier"], kEvaluationClassifierFile);
  EXPECT_TRUE(fs::exists(dir.file("models/demo/" + std::string(kEvaluationClassifierFile))));
}

}  // namespace
}  // namespace kvs
