// AMS-KV's offline threshold profiling: the theta rule on hand-made per-layer
// similarities, the calibration file (round trip, corrupt and mismatched files),
// the scales a layer at C_min decides at, the profiling on a tiny random VAR
// model (the policy's own similarity), and the policy and the session taking
// the calibrated theta unless theta= is given.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/amskv_policy.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/models/generation_session.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_similarity_calibration.h"
#include "test_helpers.h"
#include "tests/engine/scale_context.h"
#include "tests/engine/tiny_var.h"

using namespace kvs;
using kvs::test::scale_context;

namespace {

int64_t below(const std::vector<double>& values, double theta) {
  int64_t n = 0;
  for (double v : values) n += v < theta ? 1 : 0;
  return n;
}

// Two layers, scales 1, 4, 9, 16; two images; the decision scales 2 and 3.
AmsKvCalibration hand_made() {
  AmsKvCalibration c;
  c.model = "hand";
  c.layers = 2;
  c.unit_tokens = {1, 4, 9, 16};
  c.classes = {0, 3};
  c.cfg = 1.5;
  c.cds = 1;
  c.c_min = 10;
  c.c_max = 26;
  c.decision_scales = {2, 3};
  c.created = "2026-11-25T05:00:00Z";
  c.command = "kvstudio-cli calibrate --policy amskv";
  // [image][layer][scale - 1]; scale 1 is not a decision scale, so its -0.5 never counts.
  c.similarity = {{{-0.5, -0.010, -0.002}, {-0.5, -0.001, -0.003}}, {{-0.5, -0.004, -0.020}, {-0.5, -0.002, -0.001}}};
  c.demanding_fraction = 0.5;
  c.derive_theta();
  return c;
}

}  // namespace

TEST(AmsKvTheta, TheTargetShareOfLayersFallsBelowTheta) {
  const std::vector<double> s = {-0.001, -0.02, -0.005, -0.03, -0.004, -0.01};
  // A sixth of six layers: the lowest one; theta halfway to the next.
  AmsKvTheta t = choose_amskv_theta(s, 1.0 / 6.0);
  EXPECT_EQ(t.target_layers, 1);
  EXPECT_EQ(t.demanding_layers, 1);
  EXPECT_DOUBLE_EQ(t.theta, -0.025);
  EXPECT_EQ(below(s, t.theta), 1);
  t = choose_amskv_theta(s, 0.5);
  EXPECT_EQ(t.demanding_layers, 3);
  EXPECT_DOUBLE_EQ(t.theta, -0.0075);
  EXPECT_EQ(below(s, t.theta), 3);
  // At least one layer and fewer than all, whatever the share.
  EXPECT_EQ(choose_amskv_theta(s, 0.01).demanding_layers, 1);
  t = choose_amskv_theta(s, 0.99);
  EXPECT_EQ(t.target_layers, 5);
  EXPECT_EQ(below(s, t.theta), 5);
  // The order of the layers does not matter, only their values.
  const std::vector<double> reversed(s.rbegin(), s.rend());
  EXPECT_DOUBLE_EQ(choose_amskv_theta(reversed, 0.5).theta, -0.0075);
}

TEST(AmsKvTheta, TiesAllEqualAndASingleLayer) {
  // All equal: no gap to put theta in; no layer demanding (the cheaper side).
  const std::vector<double> equal(6, -0.004);
  AmsKvTheta t = choose_amskv_theta(equal, 1.0 / 6.0);
  EXPECT_EQ(t.target_layers, 1);
  EXPECT_EQ(t.demanding_layers, 0);
  EXPECT_EQ(below(equal, t.theta), 0);
  // Ties at the boundary: the nearest gap, the smaller count when two are as near.
  const std::vector<double> tied = {-0.03, -0.02, -0.02, -0.01};
  t = choose_amskv_theta(tied, 0.5);
  EXPECT_EQ(t.target_layers, 2);
  EXPECT_EQ(t.demanding_layers, 1);
  EXPECT_DOUBLE_EQ(t.theta, -0.025);
  const std::vector<double> tied_high = {-0.03, -0.03, -0.02, -0.01, -0.01, -0.01};
  t = choose_amskv_theta(tied_high, 0.5);  // k = 3: the gaps give 2 or 3; 3 exactly
  EXPECT_EQ(t.demanding_layers, 3);
  EXPECT_EQ(below(tied_high, t.theta), 3);
  // One layer: it cannot be both at least one and fewer than all; it stays cache-efficient.
  t = choose_amskv_theta({-0.02}, 1.0 / 6.0);
  EXPECT_EQ(t.target_layers, 0);
  EXPECT_EQ(t.demanding_layers, 0);
  EXPECT_FALSE(-0.02 < t.theta);
  EXPECT_THROW(choose_amskv_theta({-0.02, -0.01}, 0.0), InvalidArgumentError);
  EXPECT_THROW(choose_amskv_theta({-0.02, -0.01}, 1.0), InvalidArgumentError);
  EXPECT_THROW(choose_amskv_theta({}, 0.5), InvalidArgumentError);
  EXPECT_THROW(choose_amskv_theta({-0.02, NAN}, 0.5), InvalidArgumentError);
}

TEST(AmsKvCalibration, StatisticIsTheLowestDecisionScaleSimilarityAveragedOverImages) {
  const AmsKvCalibration c = hand_made();
  ASSERT_EQ(c.layer_statistic.size(), 2u);
  EXPECT_DOUBLE_EQ(c.layer_statistic[0], 0.5 * (-0.010 + -0.020));
  EXPECT_DOUBLE_EQ(c.layer_statistic[1], 0.5 * (-0.003 + -0.002));
  EXPECT_EQ(c.theta.demanding_layers, 1);
  EXPECT_DOUBLE_EQ(c.theta.theta, 0.5 * (c.layer_statistic[0] + c.layer_statistic[1]));
  AmsKvCalibration none = c;
  none.decision_scales.clear();
  EXPECT_THROW(none.derive_theta(), InvalidArgumentError);
}

TEST(AmsKvCalibration, JsonRoundTripAndBadFilesNameTheProblem) {
  const AmsKvCalibration c = hand_made();
  const AmsKvCalibration r = AmsKvCalibration::from_json_text(c.to_json_text(), "cal.json");
  EXPECT_EQ(r.model, c.model);
  EXPECT_EQ(r.layers, 2);
  EXPECT_EQ(r.unit_tokens, c.unit_tokens);
  EXPECT_EQ(r.classes, c.classes);
  EXPECT_EQ(r.cfg, c.cfg);
  EXPECT_EQ(r.created, c.created);
  EXPECT_EQ(r.command, c.command);
  EXPECT_EQ(r.cds, 1);
  EXPECT_EQ(r.c_min, 10);
  EXPECT_EQ(r.c_max, 26);
  EXPECT_EQ(r.decision_scales, c.decision_scales);
  EXPECT_EQ(r.similarity, c.similarity);
  EXPECT_EQ(r.layer_statistic, c.layer_statistic);
  EXPECT_EQ(r.demanding_fraction, 0.5);
  EXPECT_EQ(r.theta.theta, c.theta.theta);
  EXPECT_EQ(r.theta.target_layers, 1);
  EXPECT_EQ(r.theta.demanding_layers, 1);
  test::TempDir dir;
  const std::string path = (dir.path() / "amskv_calibration.json").string();
  c.save(path);
  EXPECT_EQ(AmsKvCalibration::load(path).theta.theta, c.theta.theta);

  // Made for another model: the layer count (or the scales) differ.
  EXPECT_NO_THROW(c.check_matches(scale_context({1, 4, 9, 16}, 2)));
  try {
    c.check_matches(scale_context({1, 4, 9, 16}, 3));
    FAIL() << "a calibration of 2 layers must not serve 3";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("the AMS-KV calibration (2 layers, scales of 1 4 9 16 tokens) was made for "
                                         "another model than this one (3 layers, scales of 1 4 9 16 tokens)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c.check_matches(scale_context({1, 4, 9, 16, 25}, 2)), InvalidArgumentError);

  auto error_of = [](const std::string& text) {
    try {
      AmsKvCalibration::from_json_text(text, "cal.json");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of("{").find("cal.json: not an AMS-KV calibration: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"kvstudio-scale-attention-profile\"}").find("format is not"), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(c.to_json_text());
  j["layers"] = 3;  // the arrays still hold two layers
  EXPECT_NE(error_of(j.dump()).find("layer_statistic has 2 values, expected one per layer (3)"), std::string::npos);
  j = nlohmann::json::parse(c.to_json_text());
  j["similarity"][1].erase(1);
  EXPECT_NE(error_of(j.dump()).find("similarity has 1 layers for an image, expected 2"), std::string::npos);
  j = nlohmann::json::parse(c.to_json_text());
  j["decision_scales"] = {0, 3};
  EXPECT_NE(error_of(j.dump()).find("decision scale 0 is outside 1..3"), std::string::npos);
  j = nlohmann::json::parse(c.to_json_text());
  j.erase("theta");
  EXPECT_NE(error_of(j.dump()).find("cal.json: not an AMS-KV calibration"), std::string::npos);
}

TEST(AmsKvCalibration, DecisionScalesAreWhereALayerAtCminOverflows) {
  // C_cds = 5 tokens, C_min = 16 + 5 = 21: scales 0-2 fit (14 tokens), scale 3
  // overflows (30) and rolls to 21, scale 4 (25 > C_min) overflows and is dropped.
  EXPECT_EQ(amskv_decision_scales(scale_context({1, 4, 9, 16, 25}, 1), {}), (std::vector<int64_t>{3, 4}));
  // The VAR schedules (1 ... 16 x 16): C_min = 169 + 5; the first 7 scales hold 155 tokens.
  EXPECT_EQ(amskv_decision_scales(scale_context({1, 4, 9, 16, 25, 36, 64, 100, 169, 256}, 1), {}),
            (std::vector<int64_t>{7, 8, 9}));
  // A larger C_min postpones the first test.
  AmsKvOptions o;
  o.c_min = 40;
  o.c_max = 46;
  EXPECT_EQ(amskv_decision_scales(scale_context({1, 4, 9, 16, 25}, 1), o), (std::vector<int64_t>{4}));
}

namespace {

using namespace kvs::var;

// Six layers (a sixth of them: one layer demanding), scales 1 ... 6 x 6: the
// decision scales are 4 and 5.
struct SixLayerVar : test::TinyVar {
  SixLayerVar() : test::TinyVar(test::tiny_var_config(6, {1, 2, 3, 4, 5, 6}), 11) {}
};

}  // namespace

TEST(AmsKvCalibration, ProfilesThePolicysOwnSimilarityOnAFullCacheGeneration) {
  SixLayerVar var;
  ScaleParams params;
  params.seed = 3;
  const std::vector<int64_t> classes = {0, 2, 4};
  const AmsKvCalibration c = calibrate_key_similarity(var.model, classes, params);
  EXPECT_EQ(c.layers, 6);
  EXPECT_EQ(c.images(), 3);
  EXPECT_EQ(c.classes, classes);
  EXPECT_EQ(c.decision_scales, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(c.c_min, 30);
  EXPECT_EQ(c.c_max, 66);
  for (const auto& image : c.similarity)
    for (const auto& layer : image)
      for (double s : layer) {
        EXPECT_TRUE(std::isfinite(s));
        EXPECT_LE(s, 0.0);
      }
  EXPECT_EQ(c.theta.target_layers, 1);
  EXPECT_EQ(c.theta.demanding_layers, 1);
  EXPECT_EQ(below(c.layer_statistic, c.theta.theta), 1);

  // The same numbers as the policy's: amskv with a budget that never overflows
  // keeps the full cache, and its last similarity is the profile's last scale.
  const PolicyContext context = scale_policy_context(var.model.transformer->config(), 3, true, params.seed);
  auto policy = make_policy("amskv:theta=-1,c_min=91,c_max=91", context);
  auto* ams = dynamic_cast<AmsKvPolicy*>(policy.get());
  ScaleHooks hooks;
  hooks.policy = [&]() -> CachePolicy* { return ams; };
  generate_scales(*var.model.transformer, *var.model.vqvae, at::tensor(classes), params, hooks);
  for (int64_t image = 0; image < 3; ++image)
    for (int64_t l = 0; l < 6; ++l)
      EXPECT_DOUBLE_EQ(ams->last_similarity(l, image), c.similarity[image][l][4]) << "layer " << l;
  // Stable: the same classes and seed give the same profile.
  EXPECT_EQ(calibrate_key_similarity(var.model, classes, params).similarity, c.similarity);
}

TEST(AmsKvCalibration, PolicyTakesTheCalibratedThetaUnlessThetaIsGiven) {
  SixLayerVar var;
  ScaleParams params;
  AmsKvCalibration c = calibrate_key_similarity(var.model, {1, 3}, params);
  PolicyContext context = scale_policy_context(var.model.transformer->config(), 1, true, 0);
  auto calibrations = std::make_shared<FixedCalibrations>();
  context.calibrations = calibrations;
  auto theta_of = [&](const std::string& spec) {
    auto policy = make_policy(spec, context);
    const auto& ams = dynamic_cast<const AmsKvPolicy&>(*policy);
    return std::make_pair(ams.theta(), ams.theta_source());
  };
  EXPECT_EQ(theta_of("amskv"), std::make_pair(kAmsKvPaperTheta, std::string("paper default")));
  calibrations->similarity = std::make_shared<const AmsKvCalibration>(c);
  EXPECT_EQ(theta_of("amskv"), std::make_pair(c.theta.theta, std::string("calibration")));
  EXPECT_EQ(theta_of("amskv:theta=-0.008"), std::make_pair(-0.008, std::string("theta=")));
  EXPECT_EQ(theta_of("amskv:theta=-0.5"), std::make_pair(-0.5, std::string("theta=")));
  // A calibration of another model is refused, unless theta is given.
  AmsKvCalibration other = c;  // a consistent file of a 4-layer model
  other.layers = 4;
  other.layer_statistic.resize(4);
  for (auto& image : other.similarity) image.resize(4);
  calibrations->similarity = std::make_shared<const AmsKvCalibration>(other);
  EXPECT_NE(test::policy_error("amskv", context).find("was made for another model"), std::string::npos);
  EXPECT_EQ(theta_of("amskv:theta=-0.008").second, "theta=");

  // Through the session: the bundle's file is read. theta = 1 promotes every layer
  // (S <= 0), theta = -1 none (S > -1 for L2-normalised keys): the calibrated
  // theta=1 keeps what amskv:theta=1 keeps, and an explicit theta wins over it.
  c.theta.theta = 1.0;
  const std::string file = var.dir.path().string() + "/" + kAmsKvCalibrationFile;
  c.save(file);
  GenerationRequest r;
  r.model_path = var.dir.path().string();
  r.class_ids = {2};
  r.device = "cpu";
  r.threads = 1;
  auto kept = [&](const std::string& spec) {
    r.policy = parse_policy_spec(spec);
    GenerationSession session;
    return session.run(r).kv_bytes_logical_final;
  };
  const int64_t calibrated = kept("amskv"), promoted = kept("amskv:theta=1"), efficient = kept("amskv:theta=-1");
  EXPECT_EQ(calibrated, promoted);
  EXPECT_LT(efficient, promoted);

  // A corrupt or mismatched file is a clear error (an explicit theta does not read it).
  test::write_bytes(file, "{\"format\": \"kvstudio-amskv-calibration\", \"version\": 1}");
  try {
    kept("amskv");
    FAIL() << "a corrupt calibration must be refused";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("amskv_calibration.json: not an AMS-KV calibration"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(kept("amskv:theta=-1"), efficient);
  other.save(file);
  try {
    kept("amskv");
    FAIL() << "a calibration of another model must be refused";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("the AMS-KV calibration (4 layers"), std::string::npos) << e.what();
    // Its own message, without the note meant for raster policies.
    EXPECT_EQ(std::string(e.what()).find("raster"), std::string::npos) << e.what();
  }
}
