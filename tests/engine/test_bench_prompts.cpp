// bench's prompts for text-to-image models: prompt files whose lines may name
// the world class the picture should show (CLASS<TAB>PROMPT), the attribute
// judge, and a bench on a tiny random Janus-Pro bundle with a (random)
// evaluation classifier that judges class only on the images whose prompt names
// one and the attributes every prompt asks for.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

#include "engine/bench/attribute_judge.h"
#include "engine/bench/policy_bench.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/scene_classifier.h"
#include "engine/models/janus/janus_random_init.h"
#include "engine/world/scene_world.h"
#include "tests/engine/test_helpers.h"

namespace kvs {
namespace {

using test::error_of;

TEST(BenchPrompts, LinesMayNameTheClassBeforeATab) {
  test::TempDir dir;
  test::write_bytes(dir.file("prompts.txt"),
                    "# world prompts\n"
                    "forest\ta dark pine forest at night\n"
                    "\n"
                    "a red fox in snow\r\n"
                    "desert \tdunes at sunset, the sun low on the left\r\n"
                    "  # an indented comment\n"
                    "\tno class before this tab\n");
  const std::vector<BenchPrompt> p = read_prompt_file(dir.file("prompts.txt"));
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].text, "a dark pine forest at night");
  EXPECT_EQ(p[0].class_id, world::scene_class_id("forest"));
  EXPECT_EQ(p[1].text, "a red fox in snow");
  EXPECT_FALSE(p[1].class_id);
  EXPECT_EQ(p[2].text, "dunes at sunset, the sun low on the left");
  EXPECT_EQ(p[2].class_id, world::scene_class_id("desert"));
  EXPECT_FALSE(p[3].class_id);  // an empty class column
  for (const BenchPrompt& d : default_bench_prompts()) EXPECT_FALSE(d.class_id) << d.text;
}

TEST(BenchPrompts, UnknownClassesAndMissingPromptsNameTheLine) {
  test::TempDir dir;
  test::write_bytes(dir.file("volcano.txt"), "lake\ta calm lake\n# next\nvolcano\tlava at night\n");
  const std::string unknown = error_of([&] { read_prompt_file(dir.file("volcano.txt")); });
  EXPECT_NE(unknown.find("volcano.txt line 3: unknown class 'volcano' before the tab"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("forest"), std::string::npos) << unknown;  // the classes are listed
  EXPECT_THROW(read_prompt_file(dir.file("volcano.txt")), InvalidArgumentError);
  test::write_bytes(dir.file("bare.txt"), "lake\t  \n");
  const std::string bare = error_of([&] { read_prompt_file(dir.file("bare.txt")); });
  EXPECT_NE(bare.find("line 1: no prompt after the class 'lake'"), std::string::npos) << bare;
  test::write_bytes(dir.file("empty.txt"), "# nothing\n\n");
  EXPECT_NE(error_of([&] { read_prompt_file(dir.file("empty.txt")); }).find("holds no prompt"), std::string::npos);
  EXPECT_THROW(read_prompt_file(dir.file("missing.txt")), FileError);
}

TEST(BenchPrompts, AttributeJudgeCountsEachCaseAsked) {
  const int night = world::scene_class_id("night_sky"), hills = world::scene_class_id("hills");
  const std::vector<RgbImage> images{world::render_scene(night, 3, 32), world::render_scene(hills, 3, 32)};
  world::PromptAttributes at_night;
  at_night.time = world::TimeOfDay::night;
  world::PromptAttributes nothing;
  AttributeScore s = judge_attributes(images, {at_night, nothing});
  EXPECT_EQ(s.time.judged, 1);
  EXPECT_EQ(s.time.shown, 1);
  EXPECT_TRUE(std::isnan(s.colour.accuracy()));
  // The hills by day are no night picture; a colour they lack is not shown.
  world::PromptAttributes asked = at_night;
  asked.colours = {world::ColourName::green, world::ColourName::purple};
  s = judge_attributes(images, {at_night, asked});
  EXPECT_EQ(s.time.judged, 2);
  EXPECT_EQ(s.time.shown, 1);
  EXPECT_EQ(s.colour.judged, 2);
  EXPECT_EQ(s.all().judged, 4);
  EXPECT_DOUBLE_EQ(s.all().accuracy(), static_cast<double>(s.all().shown) / 4.0);
  // The hills always have clouds: a cloudy sky is shown, a clear one is not.
  world::PromptAttributes cloudy, clear;
  cloudy.clouds = world::CloudCover::cloudy;
  clear.clouds = world::CloudCover::clear;
  s = judge_attributes({images[1], images[1]}, {cloudy, clear});
  EXPECT_EQ(s.clouds.judged, 2);
  EXPECT_EQ(s.clouds.shown, 1);
  EXPECT_EQ(s.all().judged, 2);
  EXPECT_THROW(judge_attributes(images, {nothing}), InvalidArgumentError);
}

// A random janus-pro-tiny bundle (64 px) that ships a random evaluation classifier.
std::string judged_janus_bundle(const test::TempDir& dir) {
  const std::string out = dir.file("janus");
  janus::write_random_janus_bundle(out, "janus-pro-tiny", janus::tiny_janus_config(), 5, "f32");
  ClassifierConfig cc;
  cc.num_classes = static_cast<int64_t>(world::scene_classes().size());
  cc.image_size = 64;
  cc.channels = {8, 16};
  cc.norm_groups = 4;
  at::manual_seed(11);
  std::map<std::string, at::Tensor> weights;
  for (const auto& e : classifier_expected_tensors(cc)) weights[e.name] = at::randn(e.shape) * 0.3;
  save_classifier(out + "/" + kEvaluationClassifierFile, cc, weights);
  nlohmann::json manifest = io::ModelBundle::open(out).manifest;
  manifest["files"]["evaluation_classifier"] = kEvaluationClassifierFile;
  io::write_bundle_manifest(out, manifest);
  return out;
}

TEST(BenchPrompts, JanusBenchJudgesClassWhereNamedAndWhatEveryPromptAsks) {
  test::TempDir dir;
  BenchOptions o;
  o.model_path = judged_janus_bundle(dir);
  o.policies = {"linear:rho=0.25"};
  o.batch = 1;
  o.images = 3;  // runs 0 and 2 take the forest prompt, run 1 the unclassed one
  o.prompts = {{"a pine forest at night", world::scene_class_id("forest")},
               {"the sun low on the left, red and blue tones, two clouds", std::nullopt}};
  o.device = "cpu";
  o.threads = 1;
  o.warmup = false;
  const std::vector<BenchRecord> records = run_policy_bench(o);
  ASSERT_EQ(records.size(), 2u);
  for (const BenchRecord& r : records) {
    EXPECT_EQ(r.class_judged, 2) << r.policy;
    EXPECT_EQ(r.quality_reference_images, 200);  // forest only: 2 images x ceil(200 / 2)
    EXPECT_GE(r.class_accuracy, 0.0);
    EXPECT_LE(r.class_accuracy, 1.0);
    EXPECT_TRUE(std::isfinite(r.demo_fid)) << r.policy;
    EXPECT_EQ(r.time_judged, 2);
    EXPECT_EQ(r.light_side_judged, 1);
    EXPECT_EQ(r.light_height_judged, 1);
    EXPECT_EQ(r.colour_judged, 2);
    EXPECT_EQ(r.clouds_judged, 1);  // the unclassed prompt: everything it asks is judged
    EXPECT_EQ(r.attribute_judged, 7);
    for (const double a :
         {r.time_accuracy, r.light_side_accuracy, r.light_height_accuracy, r.colour_accuracy, r.clouds_accuracy}) {
      EXPECT_GE(a, 0.0);
      EXPECT_LE(a, 1.0);
    }
    const double pooled = (r.time_accuracy * 2 + r.light_side_accuracy + r.light_height_accuracy +
                           r.colour_accuracy * 2 + r.clouds_accuracy) /
                          7;
    EXPECT_NEAR(r.attribute_accuracy, pooled, 1e-12);
    const nlohmann::json j = to_json(r);
    EXPECT_EQ(j["class_judged"], 2);
    EXPECT_EQ(j["colour_judged"], 2);
    EXPECT_TRUE(j["light_height_accuracy"].is_number());
    EXPECT_EQ(j["clouds_judged"], 1);
    EXPECT_TRUE(j["attribute_accuracy"].is_number());
  }

  // Prompts without a class: no class judging, attributes still; nothing asked: null.
  o.prompts = {{"a bowl of ramen, studio lighting", std::nullopt}, {"a dune field at dusk", std::nullopt}};
  o.images = 2;
  const BenchRecord plain = run_policy_bench(o)[1];
  EXPECT_EQ(plain.class_judged, 0);
  EXPECT_TRUE(std::isnan(plain.class_accuracy));
  EXPECT_EQ(plain.time_judged, 1);
  EXPECT_EQ(plain.colour_judged, 0);
  EXPECT_TRUE(to_json(plain)["colour_accuracy"].is_null());
  EXPECT_TRUE(to_json(plain)["class_accuracy"].is_null());

  o.prompts = {{"a lake", 99}};
  EXPECT_NE(error_of([&] { run_policy_bench(o); }).find("prompt class 99 is not a class"), std::string::npos);
}

}  // namespace
}  // namespace kvs
