// The bundled, trained VAR demo model passes its quality gates, ships
// HeatKV's calibration, and shows what AMS-KV is built on: per key, a scale's
// queries attend most to the condensed (first two) scales, least to the
// intermediate ones, and more again to the local scales (AMS-KV Section 3,
// Figure 4); the scale policies keep its images recognisable at a fraction of
// the cache.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/model_catalog.h"
#include "tests/engine/demo_bundle_checks.h"

namespace kvs {
namespace {

std::string var_demo_dir() { return test::shipped_demo_dir("var-demo"); }

TEST(VarDemoModel, IsTrainedOnTheWorldAndPassesItsGates) {
  const io::ModelBundle bundle = io::ModelBundle::open(var_demo_dir());
  EXPECT_EQ(bundle.family(), "var");
  test::expect_demo_quality_gates(bundle);
  // HeatKV runs without a first-use calibration: the head orders ship with it.
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(bundle.dir) / kScaleAttentionProfileFile));
  const ModelSummary summary = summarize_model_bundle(bundle.dir);
  EXPECT_TRUE(summary.usable()) << summary.problem;
  EXPECT_EQ(summary.scale_sides.back(), summary.grid);
}

// Attention per key token (mean over layers, heads and the scale's queries, the
// map the window draws) of every scale onto the scales before it and itself,
// averaged over one image per class. Groups as AMS-KV defines them: condensed =
// scales 0 and 1, local = the scale before the current one and the current one,
// intermediate = the rest.
TEST(VarDemoModel, AttentionDensityIsHighOnCondensedAndLocalScales) {
  const ModelSummary summary = summarize_model_bundle(var_demo_dir());
  ASSERT_TRUE(summary.usable()) << summary.problem;
  const std::vector<int64_t>& sides = summary.scale_sides;
  const int64_t scales = static_cast<int64_t>(sides.size());
  ASSERT_GE(scales, 6);
  std::vector<int64_t> begin(static_cast<size_t>(scales) + 1, 0);
  for (int64_t s = 0; s < scales; ++s)
    begin[static_cast<size_t>(s) + 1] = begin[static_cast<size_t>(s)] +
                                        sides[static_cast<size_t>(s)] * sides[static_cast<size_t>(s)];

  struct Sink : EventSink {
    std::vector<UnitDoneEvent> units;
    void on_event(const GenerationEvent& e) override {
      if (const auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
    }
  };
  // density[s][k]: attention per token of scale k seen by scale s's queries.
  std::vector<std::vector<double>> density(static_cast<size_t>(scales),
                                           std::vector<double>(static_cast<size_t>(scales), 0.0));
  for (int64_t c = 0; c < summary.num_classes; ++c) {
    GenerationRequest request;
    request.model_path = var_demo_dir();
    request.class_ids = {c};
    request.seed = 11 + static_cast<uint64_t>(c);
    request.threads = 1;
    request.emit_attention_map = true;
    Sink sink;
    GenerationSession().run(request, &sink);
    ASSERT_EQ(static_cast<int64_t>(sink.units.size()), scales);
    for (const UnitDoneEvent& u : sink.units) {
      ASSERT_TRUE(u.attention.has_value());
      const auto& w = u.attention->weights;
      ASSERT_EQ(static_cast<int64_t>(w.size()), begin.back());
      for (int64_t k = 0; k <= u.unit_index; ++k) {
        double mass = 0;
        for (int64_t p = begin[static_cast<size_t>(k)]; p < begin[static_cast<size_t>(k) + 1]; ++p)
          mass += w[static_cast<size_t>(p)];
        const double tokens = static_cast<double>(begin[static_cast<size_t>(k) + 1] - begin[static_cast<size_t>(k)]);
        density[static_cast<size_t>(u.unit_index)][static_cast<size_t>(k)] += mass / tokens /
                                                                              static_cast<double>(summary.num_classes);
      }
    }
  }
  // Every scale from the sixth on has condensed, intermediate and local scales.
  int64_t u_shaped = 0, judged = 0;
  for (int64_t s = 5; s < scales; ++s) {
    const auto& d = density[static_cast<size_t>(s)];
    double condensed = (d[0] + d[1]) / 2, local = (d[static_cast<size_t>(s) - 1] + d[static_cast<size_t>(s)]) / 2,
           intermediate = 0;
    for (int64_t k = 2; k < s - 1; ++k) intermediate += d[static_cast<size_t>(k)] / static_cast<double>(s - 3);
    std::printf("scale %lld (%lldx%lld) attention per key token:", static_cast<long long>(s),
                static_cast<long long>(sides[static_cast<size_t>(s)]),
                static_cast<long long>(sides[static_cast<size_t>(s)]));
    for (int64_t k = 0; k <= s; ++k) std::printf(" %.4f", d[static_cast<size_t>(k)]);
    std::printf("  | condensed %.4f intermediate %.4f local %.4f\n", condensed, intermediate, local);
    ++judged;
    if (condensed > intermediate && local > intermediate) ++u_shaped;
  }
  // The last scale (the one that holds most of the image) and most others.
  const auto& last = density.back();
  double intermediate = 0;
  for (int64_t k = 2; k < scales - 2; ++k)
    intermediate += last[static_cast<size_t>(k)] / static_cast<double>(scales - 4);
  EXPECT_GT((last[0] + last[1]) / 2, 1.5 * intermediate);
  EXPECT_GT((last[static_cast<size_t>(scales) - 2] + last.back()) / 2, intermediate);
  EXPECT_GE(u_shaped * 4, judged * 3) << u_shaped << " of " << judged << " scales";
}

// One image per class at the bundle's sampling defaults: AMS-KV and HeatKV at a
// tenth of the cache keep the class recognisable about as often as the full cache.
TEST(VarDemoModel, ScalePoliciesKeepTheClassWithASmallCache) {
  const BenchOptions options = test::one_image_per_class_bench(var_demo_dir(), {"amskv", "heatkv:budget=0.1"});
  const auto records = run_policy_bench(options);
  ASSERT_EQ(records.size(), 3u);
  const BenchRecord& full = records[0];
  for (const BenchRecord& r : records) {
    std::printf("%-20s class accuracy %.3f demo-FID %.1f KV peak %.1f %% of full\n", r.policy.c_str(), r.class_accuracy,
                r.demo_fid, 100.0 * static_cast<double>(r.kv_bytes_peak) / static_cast<double>(r.kv_bytes_full));
    if (&r == &full) continue;
    EXPECT_LT(r.kv_bytes_peak, full.kv_bytes_peak) << r.policy;
    EXPECT_GE(r.class_accuracy, full.class_accuracy - 0.25) << r.policy;
  }
  EXPECT_GE(full.class_accuracy, 0.75);
  EXPECT_LE(records[2].kv_bytes_peak, full.kv_bytes_full * 0.15);  // heatkv at budget 0.1 (+ the current scale)
}

}  // namespace
}  // namespace kvs
