// Infinity on the engine side: the official scale schedules and RoPE grid
// positions, the per-bit sampler's top-k / top-p rules, both conformance cases
// under the forced-replay rule, and a tiny random model end to end: the image
// has the size asked for, a negative prompt and per-run settings reach the
// network, every next-scale policy keeps its budget on the self-attention
// cache, the same request gives the same bits, and bad requests and bundles are
// refused with messages that say what to do.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/generation_session.h"
#include "engine/models/infinity/bitwise_sampler.h"
#include "engine/models/infinity/infinity_conformance.h"
#include "engine/models/infinity/infinity_model.h"
#include "engine/models/infinity/infinity_random_init.h"
#include "engine/models/infinity/scale_schedules.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
using namespace kvs::infinity;

namespace {

const test::TempDir& tiny_bundle_dir() {
  static const test::TempDir dir;
  static const bool written = [] {
    write_random_infinity_bundle(dir.file("tiny"), "infinity-tiny", random_infinity_config("infinity-tiny"), 5, "f32");
    return true;
  }();
  (void)written;
  return dir;
}

GenerationRequest tiny_request() {
  GenerationRequest request;
  request.model_path = tiny_bundle_dir().file("tiny");
  request.prompt = "a red fox in the snow";
  request.cfg_scale = 3.0;
  request.sampling.temperature = 0.5;
  request.sampling.top_k = 900;
  request.sampling.top_p = 0.97;
  request.seed = 4;
  return request;
}

void expect_case_passes(const std::string& name) {
  if (const std::string why = test::conformance_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string path = test::conformance_dir() + "/" + name + ".json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  std::ifstream in(path);
  const nlohmann::ordered_json manifest = nlohmann::ordered_json::parse(in);
  const ConformanceReport report = run_infinity_conformance(manifest, std::filesystem::path(path).parent_path(),
                                                            c10::Device(c10::kCPU));
  int compared = 0;
  for (const ConformanceCheck& c : report.checks) {
    if (c.skipped) continue;
    ++compared;
    EXPECT_TRUE(c.passed) << name << ": " << c.tensor << " max error " << c.max_abs_error << " (atol " << c.atol
                          << "), " << c.mismatches << " of " << c.elements << " off; " << c.note;
  }
  EXPECT_GE(compared, 30) << name;
  EXPECT_TRUE(report.passed());
}

}  // namespace

TEST(InfinitySchedules, TheOfficialTemplatesAndBudgets) {
  const auto& templates = scale_templates();
  ASSERT_EQ(templates.size(), 15u);
  EXPECT_DOUBLE_EQ(templates[0].h_div_w, 1.0);
  EXPECT_DOUBLE_EQ(templates[2].h_div_w, 0.8);    // 1.25's transpose
  EXPECT_DOUBLE_EQ(templates[4].h_div_w, 0.75);   // int(1 / 1.333 * 1000) / 1000
  EXPECT_DOUBLE_EQ(templates[6].h_div_w, 0.666);  // 1.5's
  const auto square = scale_schedule(nearest_template(1.0), "1M");
  ASSERT_EQ(square.size(), 13u);
  EXPECT_EQ(square.back(), (Grid{64, 64}));
  EXPECT_EQ(schedule_tokens(square), 10521);
  EXPECT_EQ(schedule_tokens(scale_schedule(nearest_template(1.0), "0.06M")), 521);
  EXPECT_EQ(schedule_tokens(scale_schedule(nearest_template(1.0), "0.25M")), 2521);
  const auto wide = scale_schedule(nearest_template(0.74), "0.06M");  // 0.75: 240 x 320 px
  EXPECT_EQ(schedule_tokens(wide), 665);
  EXPECT_EQ(wide.back(), (Grid{15, 20}));
  EXPECT_NE(test::error_of([] { scale_schedule(nearest_template(1.0), "2M"); }).find("0.06M, 0.25M, 0.60M, 1M"),
            std::string::npos);
}

TEST(InfinitySchedules, RopePositionsAreOnTheTemplates1MLastScale) {
  std::vector<int64_t> rows, cols;
  rope_grid_positions(nearest_template(1.0), {{1, 1}, {2, 2}, {6, 6}}, rows, cols);
  ASSERT_EQ(rows.size(), 1u + 4u + 36u);
  EXPECT_EQ(rows[0], 0);
  EXPECT_EQ((std::vector<int64_t>(rows.begin() + 1, rows.begin() + 5)), (std::vector<int64_t>{0, 0, 32, 32}));
  EXPECT_EQ((std::vector<int64_t>(cols.begin() + 1, cols.begin() + 5)), (std::vector<int64_t>{0, 32, 0, 32}));
  // 64 / 6 = 10.667: round half to even of i * 10.667 gives 0, 11, 21, 32, 43, 53.
  EXPECT_EQ((std::vector<int64_t>(cols.begin() + 5, cols.begin() + 11)), (std::vector<int64_t>{0, 11, 21, 32, 43, 53}));
}

TEST(InfinitySampler, TopKAndTopPFollowTheOfficialRules) {
  const at::Tensor logits = at::tensor({2.0f, 1.0f, 0.5f, 0.5f, -1.0f, 3.0f}).view({3, 2});
  // top-k 1: greedy with ties kept.
  at::Tensor k1 = filter_bit_logits(logits, {1, 0.0});
  EXPECT_TRUE(std::isinf(k1[0][1].item<float>()));
  EXPECT_FALSE(std::isinf(k1[1][0].item<float>()) || std::isinf(k1[1][1].item<float>()));
  // top-k 900 over two values removes nothing.
  EXPECT_TRUE(at::equal(filter_bit_logits(logits, {900, 0.0}), logits));
  // top-p 0.97: the smaller goes iff its probability <= 0.03.
  at::Tensor p = filter_bit_logits(at::tensor({0.0f, 4.0f, 0.0f, 3.0f}).view({2, 2}), {0, 0.97});
  EXPECT_TRUE(std::isinf(p[0][0].item<float>()));   // p_small = 0.018
  EXPECT_FALSE(std::isinf(p[1][0].item<float>()));  // p_small = 0.047
  // The same seed draws the same bits; recorded draws replay.
  BitwiseSampler a(9), b(9);
  const at::Tensor many = at::randn({2, 50, 2});
  EXPECT_TRUE(at::equal(a.sample(many, {}), b.sample(many, {})));
  BitwiseSampler c(1);
  const at::Tensor draws = at::ones({100, 2});
  EXPECT_TRUE(at::equal(c.sample(many, {0, 0.0}, draws), many.argmax(-1)));
}

TEST(InfinityConformance, TinyCasePassesUnderForcedReplay) { expect_case_passes("infinity_tiny"); }

TEST(InfinityConformance, PatchifiedCasePassesUnderForcedReplay) { expect_case_passes("infinity_patchify_tiny"); }

TEST(InfinityGeneration, ImagesOfTheAskedSizeAndTheSameBitsAgain) {
  GenerationRequest request = tiny_request();
  request.images = 2;
  request.image_size = "80x60";  // the 0.75 template at 0.06M: 15 x 20 tokens of 4 px
  GenerationSession session;
  const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
  const GenerationResult result = session.run(bundle, request, nullptr);
  ASSERT_EQ(result.images.size(), 2u);
  EXPECT_EQ(result.images[0].width, 80);
  EXPECT_EQ(result.images[0].height, 60);
  EXPECT_EQ(result.kv_bytes_logical_final, result.kv_bytes_full);
  const GenerationResult again = session.run(bundle, request, nullptr);
  EXPECT_EQ(again.tokens, result.tokens);
  request.negative_prompt = "blurry, low quality";
  const GenerationResult negative = session.run(bundle, request, nullptr);
  EXPECT_NE(negative.tokens, result.tokens);
}

TEST(InfinityGeneration, EveryScalePolicyKeepsItsBudget) {
  GenerationSession session;
  GenerationRequest request = tiny_request();
  const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
  request.policy = parse_policy_spec("full");
  const GenerationResult full = session.run(bundle, request, nullptr);
  // AMS-KV's ablations too: Table 2's uniform allocation and the order of attention and eviction.
  for (const std::string spec :
       {"streaming:rho=0.25", "h2o:rho=0.25", "snapkv:rho=0.25", "amskv", "amskv:allocation=uniform",
        "amskv:order=evict_first", "heatkv:budget=0.1", "heatkv:budget=0.2,calibration_images=3",
        "heatkv:budget=0.1,variant=binary", "hack", "scalekv"}) {
    request.policy = parse_policy_spec(spec);
    const GenerationResult r = session.run(bundle, request, nullptr);
    ASSERT_EQ(r.images.size(), 1u) << spec;
    EXPECT_LT(r.kv_bytes_logical_final, full.kv_bytes_logical_final) << spec;
    EXPECT_LE(r.kv_bytes_peak, full.kv_bytes_peak) << spec;
  }
  // AMS-KV's Table 1 (scale_groups): the full cache without one group of scales. It is
  // an ablation, not a budget: a group leaves only once the scales after it exist (the
  // local scales at the end), so its peak may top the full cache's, with the store's
  // compaction copy on a model this small; what it keeps at the end is never more.
  for (const std::string spec : {"scale_groups", "scale_groups:remove=local", "scale_groups:remove=condensed"}) {
    request.policy = parse_policy_spec(spec);
    const GenerationResult r = session.run(bundle, request, nullptr);
    ASSERT_EQ(r.images.size(), 1u) << spec;
    EXPECT_LE(r.kv_bytes_logical_final, full.kv_bytes_logical_final) << spec;
    EXPECT_NE(r.tokens, full.tokens) << spec;  // the removed group changed what the scales attend to
  }
  // HeatKV calibrates on prompts: a set larger than the prompt list is refused by its own message.
  request.policy = parse_policy_spec("heatkv:calibration_images=31");
  const std::string error = test::error_of([&] { session.run(bundle, request, nullptr); });
  EXPECT_NE(error.find("1 to 30 prompts"), std::string::npos) << error;
}

namespace {
struct InfinityEvents : EventSink {
  std::vector<StartedEvent> started;
  std::vector<UnitDoneEvent> units;
  void on_event(const GenerationEvent& e) override {
    if (auto* s = std::get_if<StartedEvent>(&e)) started.push_back(*s);
    if (auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
  }
};
}  // namespace

TEST(InfinityGeneration, EachScaleReportsItsCrossAttentionOverThePromptPieces) {
  GenerationRequest request = tiny_request();
  request.emit_attention_map = true;
  GenerationSession session;
  const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
  InfinityEvents events;
  session.run(bundle, request, &events);
  ASSERT_EQ(events.started.size(), 1u);
  const StartedEvent& started = events.started.front();
  EXPECT_EQ(started.condition_tokens, 0);  // the text is not in the self-attention cache
  ASSERT_GE(started.condition_labels.size(), 3u);
  EXPECT_EQ(started.condition_labels.back(), "</s>");
  ASSERT_EQ(static_cast<int64_t>(events.units.size()), started.units_total);
  std::vector<float> first;
  for (const UnitDoneEvent& u : events.units) {
    ASSERT_EQ(u.condition_attention.size(), started.condition_labels.size()) << "scale " << u.unit_index;
    double sum = 0;
    for (float v : u.condition_attention) {
      EXPECT_GE(v, 0.0f);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-4) << "scale " << u.unit_index;
    if (first.empty()) first = u.condition_attention;
  }
  EXPECT_NE(events.units.back().condition_attention, first);  // each scale's own queries
  // Without attention maps nothing is measured.
  request.emit_attention_map = false;
  InfinityEvents quiet;
  session.run(bundle, request, &quiet);
  for (const UnitDoneEvent& u : quiet.units) EXPECT_TRUE(u.condition_attention.empty());
}

TEST(InfinityGeneration, BadRequestsSayWhatToDo) {
  GenerationSession session;
  GenerationRequest request = tiny_request();
  const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
  request.image_size = "100x100";
  const std::string size_error = test::error_of([&] { session.run(bundle, request, nullptr); });
  EXPECT_NE(size_error.find("not one Infinity writes"), std::string::npos) << size_error;
  EXPECT_NE(size_error.find("64x64"), std::string::npos) << size_error;
  request.image_size = "";
  request.sampling.temperature = 0;
  EXPECT_NE(test::error_of([&] { session.run(bundle, request, nullptr); }).find("tau"), std::string::npos);
}

TEST(InfinityBundle, AMissingTensorIsRefusedByName) {
  const test::TempDir dir;
  const std::string copy = dir.file("broken");
  std::filesystem::copy(tiny_bundle_dir().file("tiny"), copy, std::filesystem::copy_options::recursive);
  // Rewrite the weights without one block's FFN weight.
  auto reader = io::SafetensorsReader::open(copy + "/weights.safetensors");
  std::vector<std::pair<std::string, at::Tensor>> kept;
  for (const std::string& name : reader->names())
    if (name != "infinity.block_chunks.1.module.0.ffn.fc1.weight")
      kept.emplace_back(name, reader->tensor(name).clone());
  reader.reset();
  io::write_safetensors(copy + "/weights.safetensors", kept, {});
  const std::string error = test::error_of(
      [&] { InfinityModel::load(io::ModelBundle::open(copy), c10::Device(c10::kCPU), at::kFloat); });
  EXPECT_NE(error.find("infinity.block_chunks.1.module.0.ffn.fc1.weight"), std::string::npos) << error;
}
