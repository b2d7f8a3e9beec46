// The training tool's small parts: Fréchet distance, AdamW, LR schedule, gradient
// clipping, checkpoints, the evaluation classifier and the world data sets.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/metrics/frechet_distance.h"
#include "engine/metrics/scene_classifier.h"
#include "engine/training/adamw.h"
#include "engine/training/checkpoint.h"
#include "engine/training/lr_schedule.h"
#include "engine/training/world_dataset.h"
#include "tests/engine/test_helpers.h"

namespace kvs::training {
namespace {

at::Tensor gaussian_features(int64_t n, int64_t f, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::normal(0.0, 1.0, {n, f}, gen, at::TensorOptions().dtype(at::kDouble)) *
         at::linspace(0.5, 2.0, f, at::TensorOptions().dtype(at::kDouble));
}

TEST(TrainingFrechet, IdenticalSetsAreZeroAndShiftsAreAnalytic) {
  const at::Tensor a = gaussian_features(500, 16, 1);
  EXPECT_NEAR(frechet_distance(a, a), 0.0, 1e-8);
  // A shift moves only the mean term: d = |delta|^2.
  at::Tensor delta = at::linspace(-1.0, 1.0, 16, at::TensorOptions().dtype(at::kDouble));
  EXPECT_NEAR(frechet_distance(a, a + delta), delta.dot(delta).item<double>(), 1e-7);
  // Scaling by 2: S_b = 4 S_a, (S_a S_b)^(1/2) = 2 S_a, so d = |mu_a|^2 + tr(S_a).
  const FeatureStats s = feature_stats(a);
  const double expected = s.mean.dot(s.mean).item<double>() + s.cov.trace().item<double>();
  EXPECT_NEAR(frechet_distance(a, a * 2), expected, 1e-7 * expected);
  // Symmetric, and positive for different distributions.
  const at::Tensor b = gaussian_features(500, 16, 2);
  EXPECT_NEAR(frechet_distance(a, b), frechet_distance(b, a), 1e-8);
  EXPECT_GT(frechet_distance(a, b * 3), frechet_distance(a, b));
}

TEST(TrainingOptim, AdamWFollowsPyTorchsRule) {
  ParameterSet params;
  params.add("w", at::tensor({1.0, -2.0}));  // decayed (as a 1-D tensor it is not, see below)
  params.add("m", at::ones({2, 2}));         // >= 2-D: decayed
  AdamWOptions o;
  o.weight_decay = 0.1;
  AdamW opt(params, o);
  const double lr = 0.01;
  params.get("w").mutable_grad() = at::tensor({0.5f, 0.25f});
  params.get("m").mutable_grad() = at::full({2, 2}, 2.0f);
  opt.step(lr);
  // First step: m = (1-b1) g, v = (1-b2) g^2, bias-corrected -> update = lr * g / (|g| + eps') = lr * sign(g).
  EXPECT_NEAR(params.get("w")[0].item<double>(), 1.0 - lr, 1e-6);
  EXPECT_NEAR(params.get("w")[1].item<double>(), -2.0 - lr, 1e-6);
  EXPECT_NEAR(params.get("m")[0][0].item<double>(), 1.0 * (1 - lr * 0.1) - lr, 1e-6);
  EXPECT_EQ(opt.steps_taken(), 1);
}

TEST(TrainingOptim, ScheduleAndClipping) {
  const LrSchedule s{1.0, 10, 110, 0.1};
  EXPECT_NEAR(s.at(0), 0.1, 1e-12);
  EXPECT_NEAR(s.at(9), 1.0, 1e-12);
  EXPECT_NEAR(s.at(10), 1.0, 1e-12);
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
  EXPECT_NEAR(s.at(500), 0.1, 1e-12);
  ParameterSet params;
  params.add("a", at::zeros({2}));
  params.get("a").mutable_grad() = at::tensor({3.0f, 4.0f});
  EXPECT_NEAR(clip_grad_norm(params, 1.0), 5.0, 1e-5);
  EXPECT_NEAR(params.get("a").grad().norm().item<double>(), 1.0, 1e-5);
}

TEST(TrainingCheckpoint, RoundTripsWeightsAndOptimizerState) {
  test::TempDir dir;
  ParameterSet a;
  a.add("x.weight", at::rand({3, 2}));
  AdamW opt_a(a, {});
  a.get("x.weight").mutable_grad() = at::rand({3, 2});
  opt_a.step(0.1);
  save_checkpoint(dir.path().string(), a, &opt_a, 42, {{"kind", "test"}});
  ParameterSet b;
  b.add("x.weight", at::zeros({3, 2}));
  AdamW opt_b(b, {});
  const nlohmann::json m = load_checkpoint(dir.path().string(), b, &opt_b);
  EXPECT_EQ(m["step"], 42);
  EXPECT_EQ(m["kind"], "test");
  EXPECT_TRUE(a.get("x.weight").equal(b.get("x.weight")));
  EXPECT_EQ(opt_b.steps_taken(), 1);
  EXPECT_TRUE(opt_a.state_tensors()[1].second.equal(opt_b.state_tensors()[1].second));
  // A wrong shape is reported by name.
  ParameterSet c;
  c.add("x.weight", at::zeros({2, 2}));
  EXPECT_THROW(load_checkpoint(dir.path().string(), c, nullptr), ModelMismatchError);
}

TEST(TrainingClassifier, FeaturesLogitsAndFileRoundTrip) {
  ClassifierConfig cfg;
  cfg.num_classes = 4;
  cfg.image_size = 16;
  cfg.channels = {8, 16};
  ParameterSet params = init_parameters(classifier_expected_tensors(cfg), 3, at::kCPU);
  SceneClassifier model(cfg, params.as_map(), at::kCPU);
  at::Tensor u8 = at::randint(256, {5, 16, 16, 3}, at::TensorOptions().dtype(at::kByte));
  SceneClassifier::Output out = model.classify_u8(u8, 2);
  EXPECT_EQ(out.logits.sizes(), at::IntArrayRef({5, 4}));
  EXPECT_EQ(out.features.sizes(), at::IntArrayRef({5, 16}));
  test::TempDir dir;
  save_classifier(dir.file("c.safetensors"), cfg, params.as_map());
  SceneClassifier loaded = SceneClassifier::load(dir.file("c.safetensors"), at::kCPU);
  EXPECT_TRUE(at::allclose(loaded.classify_u8(u8).logits, out.logits, 1e-5, 1e-5));
  EXPECT_DOUBLE_EQ(accuracy(at::tensor({0.1, 0.9, 0.8, 0.2}).view({2, 2}), at::tensor({int64_t{1}, int64_t{1}})), 0.5);
}

TEST(TrainingWorldData, SplitsAreDisjointAndBatchesNormalised) {
  const auto train = world_items(WorldSplit::Train, 2, 3);
  const auto held = world_items(WorldSplit::HeldOut, 2, 3);
  ASSERT_EQ(train.size(), 6u);
  EXPECT_EQ(train[4].class_id, 1);
  EXPECT_EQ(train[4].seed, 1u);
  for (const auto& h : held) EXPECT_GE(h.seed, kHeldOutSeedBase);
  test::TempDir dir;
  const std::vector<WorldItem> items = {{0, 1}, {world_class_count() - 1, 2}};
  WorldImageSet set = WorldImageSet::render_cached(items, 16, dir.file("w.safetensors"));
  WorldImageSet again = WorldImageSet::render_cached(items, 16, dir.file("w.safetensors"));
  EXPECT_TRUE(set.pixels().equal(again.pixels()));
  at::Tensor idx = at::tensor({1, 0}, at::TensorOptions().dtype(at::kLong));
  at::Tensor x = set.batch(idx, at::kCPU, at::tensor({1, 0}, at::TensorOptions().dtype(at::kLong)));
  EXPECT_EQ(x.sizes(), at::IntArrayRef({2, 3, 16, 16}));
  EXPECT_GE(x.min().item<double>(), -1.0);
  EXPECT_LE(x.max().item<double>(), 1.0);
  // Row 0 is image 1 mirrored; row 1 is image 0 as is.
  at::Tensor img1 = set.pixels()[1].permute({2, 0, 1}).to(at::kFloat) / 127.5 - 1;
  EXPECT_TRUE(at::allclose(x[0], img1.flip({2})));
  EXPECT_TRUE(set.labels().equal(at::tensor({int64_t{0}, world_class_count() - 1})));
}

}  // namespace
}  // namespace kvs::training
