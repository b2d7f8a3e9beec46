// HACK (arXiv 2504.09261): the offline head classification by attention variance
// (its profile, JSON form and calibration on a tiny random VAR model), the
// asymmetric contextual / structural budgets, what each category keeps on a
// hand-built scale cache, clear errors for bad parameters, generations that
// never exceed a head's budget after a cut, and the name the CLI and the window
// list.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/hack_policy.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/policy_catalog.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"
#include "engine/models/generation_session.h"
#include "engine/models/var/hack_calibration.h"
#include "engine/models/var/var_generation.h"
#include "tests/engine/scale_context.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_var.h"

using namespace kvs;
using kvs::test::scale_context;

namespace {

// Head `h` of layer `l` gets variance per_head[l * heads + h] at every scale.
HeadVarianceProfile variances(const PolicyContext& c, const std::vector<double>& per_head) {
  HeadVarianceProfile p = HeadVarianceProfile::uniform(c);
  for (int64_t l = 0; l < c.n_layer; ++l)
    for (int64_t h = 0; h < c.kv_heads; ++h)
      for (int64_t k = 0; k < p.scales(); ++k)
        p.variance_at(l, h, k) = per_head.at(static_cast<size_t>(l * c.kv_heads + h));
  return p;
}

// `c` with the calibration the VAR session would answer HACK with.
PolicyContext with_variance(PolicyContext c, const HeadVarianceProfile& profile) {
  auto calibrations = std::make_shared<FixedCalibrations>();
  calibrations->variance = std::make_shared<const HeadVarianceProfile>(profile);
  c.calibrations = calibrations;
  return c;
}

// The policy of `spec`, given the calibration the VAR session would hand it.
std::unique_ptr<CachePolicy> calibrated_hack(const std::string& spec, const PolicyContext& c,
                                             const std::vector<double>& per_head) {
  return make_policy(spec, with_variance(c, variances(c, per_head)));
}

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST(Hack, SpatialOrderSpreadsEveryPrefixOverTheMap) {
  // 3x3 in a 4x4 grid: the corners first, the centre last.
  EXPECT_EQ(spatial_uniform_rank(3), (std::vector<int64_t>{0, 6, 2, 4, 8, 5, 1, 7, 3}));
  // 4x4: the first four are the 2x2 grid of even rows and columns.
  const std::vector<int64_t> four = spatial_uniform_rank(4);
  std::vector<int64_t> first;
  for (int64_t i = 0; i < 16; ++i)
    if (four[static_cast<size_t>(i)] < 4) first.push_back(i);
  EXPECT_EQ(first, (std::vector<int64_t>{0, 2, 8, 10}));
  // A permutation for any side.
  std::vector<int64_t> thirteen = spatial_uniform_rank(13);
  std::sort(thirteen.begin(), thirteen.end());
  EXPECT_EQ(thirteen, range(0, 169));
  EXPECT_EQ(spatial_uniform_rank(1), std::vector<int64_t>{0});
}

TEST(Hack, ProfileClassifiesTheHighestVarianceHeadsContextual) {
  const PolicyContext c = scale_context({1, 4, 9}, 2, 2);
  HeadVarianceProfile p = HeadVarianceProfile::uniform(c);
  // Scores: mean over scales 1 and 2 (scale 0 does not count).
  p.variance_at(0, 1, 0) = 100.0;  // ignored
  p.variance_at(0, 1, 1) = 2.0;
  p.variance_at(1, 0, 1) = 1.0;
  p.variance_at(1, 0, 2) = 5.0;
  EXPECT_DOUBLE_EQ(p.score(0, 1), 1.0);
  EXPECT_DOUBLE_EQ(p.score(1, 0), 3.0);
  EXPECT_EQ(p.contextual_heads(1), (std::vector<uint8_t>{0, 0, 1, 0}));
  EXPECT_EQ(p.contextual_heads(2), (std::vector<uint8_t>{0, 1, 1, 0}));
  // Ties (heads 0,0 and 1,1 both score 0): the lower index first.
  EXPECT_EQ(p.contextual_heads(3), (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(p.contextual_heads(9), (std::vector<uint8_t>{1, 1, 1, 1}));
  // JSON round trip.
  const HeadVarianceProfile back = HeadVarianceProfile::from_json_text(p.to_json_text(), "test");
  EXPECT_EQ(back.variance, p.variance);
  EXPECT_EQ(back.unit_tokens, p.unit_tokens);
  // Malformed files and other models are refused with their reason.
  EXPECT_THROW(HeadVarianceProfile::from_json_text("{}", "x.json"), FormatError);
  std::string negative = p.to_json_text();
  negative.replace(negative.find("100.0"), 5, "-1.00");
  try {
    HeadVarianceProfile::from_json_text(negative, "x.json");
    FAIL() << "a negative variance must be refused";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("not a normalised variance"), std::string::npos) << e.what();
  }
  EXPECT_THROW(p.check_matches(scale_context({1, 4, 9}, 2, 1)), InvalidArgumentError);
}

TEST(Hack, BudgetsAreAsymmetricAndAverageAtMostB) {
  // 2 layers x 2 heads, c_k = 1, 5, 14, 30, 55; heads 0,1 and 1,0 contextual.
  const PolicyContext c = scale_context({1, 4, 9, 16, 25}, 2, 2);
  const std::vector<double> v = {0.1, 3.0, 2.0, 0.2};
  // Before the calibration every head scores alike: the first heads are contextual.
  auto stand_in = make_policy("hack:budget=20,sinks=2", c);
  EXPECT_FALSE(dynamic_cast<const HackPolicy&>(*stand_in).calibrated());
  EXPECT_TRUE(dynamic_cast<const HackPolicy&>(*stand_in).is_contextual(0, 0));
  auto made = calibrated_hack("hack:budget=20,sinks=2", c, v);
  const auto& hack = dynamic_cast<const HackPolicy&>(*made);
  EXPECT_TRUE(hack.calibrated());
  EXPECT_TRUE(hack.is_contextual(0, 1) && hack.is_contextual(1, 0));
  EXPECT_FALSE(hack.is_contextual(0, 0) || hack.is_contextual(1, 1));
  // f = 1/2, ratio = 1/2: B_s = floor(20 / 0.75) = 26, B_c = 13.
  EXPECT_EQ(hack.structural_budget(), 26);
  EXPECT_EQ(hack.contextual_budget(), 13);
  EXPECT_EQ(hack.head_budget(0, 1), 13);
  EXPECT_EQ(hack.head_budget(1, 1), 26);
  EXPECT_EQ(hack.budget_tokens(), 26);
  EXPECT_EQ(hack.sink_tokens(), 5);
  EXPECT_LE(2 * 13 + 2 * 26, 4 * 20);
  // A contextual budget below the sinks plus one token is raised; the structural heads pay.
  auto tight = calibrated_hack("hack:budget=8,sinks=2", c, v);
  const auto& t = dynamic_cast<const HackPolicy&>(*tight);
  EXPECT_EQ(t.contextual_budget(), 6);
  EXPECT_EQ(t.structural_budget(), 10);
  // One category only: every head keeps B.
  auto all = make_policy("hack:budget=20,contextual=1", c);
  EXPECT_EQ(dynamic_cast<const HackPolicy&>(*all).structural_budget(), 20);
  EXPECT_EQ(dynamic_cast<const HackPolicy&>(*all).contextual_budget(), 20);
  // rho: B = rho x all image tokens (55), as the other scale baselines.
  auto rho = make_policy("hack:rho=1/5,ratio=1,sinks=2", c);
  EXPECT_EQ(dynamic_cast<const HackPolicy&>(*rho).contextual_budget(), 11);
  EXPECT_EQ(dynamic_cast<const HackPolicy&>(*rho).structural_budget(), 11);

  // Clear errors.
  EXPECT_NE(test::policy_error("hack:budget=5,sinks=2", c).find("policy hack: budget 5 tokens is impossible"),
            std::string::npos);
  EXPECT_NE(test::policy_error("hack:contextual=3/2", c).find("contextual 1.5"), std::string::npos);
  EXPECT_NE(test::policy_error("hack:ratio=0", c).find("policy hack: ratio"), std::string::npos);
  EXPECT_NE(test::policy_error("hack:sinks=5", c).find("sinks 5 is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("hack:window=4", c).find("unknown parameter 'window'"), std::string::npos);
  EXPECT_NE(test::policy_error("hack", scale_context({1, 4, 9}, 2, 2)).find("sinks 3 is impossible"),
            std::string::npos);
  const std::string other =
      test::policy_error("hack:budget=20,sinks=2",
                         with_variance(c, HeadVarianceProfile::uniform(scale_context({1, 4, 9}, 2, 2))));
  EXPECT_NE(other.find("made for another model"), std::string::npos) << other;
  EXPECT_NE(test::policy_error("hack", test::small_policy_context(4)).find("next-scale (VAR) models only"),
            std::string::npos);
}

TEST(Hack, ContextualHeadsKeepWhatTheQueriesPileOntoStructuralHeadsTheLayout) {
  // One layer, scales 1, 4, 9 (c = 1, 5, 14), one sink scale. Head 0 is contextual
  // (B_c = 4), head 1 structural (B_s = 8): B = 6, ratio 1/2.
  const PolicyContext c = scale_context({1, 4, 9}, 1, 2);
  auto made = calibrated_hack("hack:budget=6,sinks=1", c, {5.0, 0.5});
  auto& hack = dynamic_cast<HackPolicy&>(*made);
  ASSERT_EQ(hack.contextual_budget(), 4);
  ASSERT_EQ(hack.structural_budget(), 8);
  ASSERT_TRUE(hack.is_contextual(0, 0));
  KvStore store(1, 1, 2, 4, c.image_tokens(), at::TensorOptions().dtype(at::kFloat));
  // The attention of each scale's queries per entry: position 2 is ignored at
  // scale 1, positions 3, 9 and 12 are what scale 2 looks at.
  auto attention_on = [](int64_t pos, int64_t unit) -> float {
    if (unit == 1) return pos == 2 ? 0.1f : 1.0f;
    if (pos == 3 || pos == 9 || pos == 12) return 5.0f;
    return pos == 0 ? 9.0f : 0.5f;
  };
  for (int64_t u = 0; u < 3; ++u) {
    const int64_t t = c.unit_tokens[static_cast<size_t>(u)];
    const at::Tensor k = at::randn({1, 2, t, 4});
    store.append(0, k, k, range(c.unit_begin(u), c.unit_begin(u) + t));
    const int64_t length = store.max_length(0);
    at::Tensor mass = at::zeros({1, 2, length});
    for (int64_t h = 0; h < 2; ++h) {
      const std::vector<int64_t> pos = store.positions(0, 0, h);
      for (size_t slot = 0; slot < pos.size(); ++slot)
        mass[0][h][static_cast<int64_t>(slot)] = attention_on(pos[slot], u);
    }
    hack.observe_unit_attention(0, u, mass, store.positions_tensor(0));
    hack.after_unit_layer(store, 0, u);
    for (int64_t h = 0; h < 2; ++h)
      EXPECT_LE(static_cast<int64_t>(store.positions(0, 0, h).size()), hack.head_budget(0, h)) << u << " " << h;
    if (u == 1) {
      // The contextual head drops the entry the scale ignored; the structural head keeps all 5.
      EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 3, 4}));
      EXPECT_EQ(store.positions(0, 0, 1), range(0, 5));
    }
  }
  // Contextual: the sink and the three most attended entries.
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 3, 9, 12}));
  // Structural: the sink and the newest scale (positions 5..13), 7 of its 9 tokens in
  // the spatial order: the centre (token 4, position 9) and token 7 (position 12) go.
  EXPECT_EQ(store.positions(0, 0, 1), (std::vector<int64_t>{0, 5, 6, 7, 8, 10, 11, 13}));
  // The sink scales are the policy's one region.
  const std::vector<CacheRegion> regions = hack.regions(14);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].name, "sinks");
  EXPECT_EQ(regions[0].end, 1);
}

namespace {

using namespace kvs::var;

struct SmallVar : test::TinyVar {
  SmallVar() : test::TinyVar(test::tiny_var_config(3, {1, 2, 3, 4, 5, 6}), 7) {}
};

// HACK that checks every head's budget right after each cut.
class CheckedHack : public HackPolicy {
 public:
  using HackPolicy::HackPolicy;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override {
    HackPolicy::after_unit_layer(store, layer, unit);
    for (int64_t row = 0; row < store.rows(); ++row)
      for (int64_t h = 0; h < store.kv_heads(); ++h) EXPECT_LE(store.length(layer, row, h), head_budget(layer, h));
    ++checks;
  }
  int64_t checks = 0;
};

}  // namespace

TEST(Hack, CalibrationMeasuresEveryHeadsAttentionVariance) {
  SmallVar var;
  ScaleParams params;
  params.seed = 3;
  const HeadVarianceProfile p = calibrate_head_variance(var.model, {0, 2}, params);
  EXPECT_EQ(p.samples, 2);
  EXPECT_EQ(p.layers, 3);
  EXPECT_EQ(p.heads, 2);
  EXPECT_EQ(p.scales(), 6);
  for (int64_t l = 0; l < 3; ++l)
    for (int64_t h = 0; h < 2; ++h) {
      // The first scale sees one key: no variance.
      EXPECT_NEAR(p.variance_at(l, h, 0), 0.0, 1e-9);
      for (int64_t k = 1; k < 6; ++k) {
        const double v = p.variance_at(l, h, k);
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_GE(v, 0.0);
        // At most all the attention on one of the c_k keys: c_k - 1.
        EXPECT_LE(v, static_cast<double>(p.unit_tokens[0] + 4 + 9 + 16 + 25 + 36) - 1.0);
      }
    }
  // The same images give the same numbers.
  EXPECT_EQ(calibrate_head_variance(var.model, {0, 2}, params).variance, p.variance);
}

TEST(Hack, GenerationKeepsEveryHeadsBudgetAfterEveryCut) {
  SmallVar var;
  const VarConfig& config = var.model.transformer->config();
  ScaleParams params;
  params.seed = 5;
  const PolicyContext context = scale_policy_context(config, 2, true, params.seed);
  HackOptions o;
  o.budget = 30;  // of 91 tokens
  o.sinks = 2;
  CheckedHack policy(with_variance(context, calibrate_head_variance(var.model, {1, 3}, params)), o);
  int64_t contextual = 0;
  for (int64_t l = 0; l < 3; ++l)
    for (int64_t h = 0; h < 2; ++h) contextual += policy.is_contextual(l, h);
  EXPECT_EQ(contextual, 3);
  const at::Tensor labels = at::tensor({1, 3}, at::kLong);
  const ScaleResult full = generate_scales(*var.model.transformer, *var.model.vqvae, labels, params);
  ScaleHooks hooks;
  hooks.policy = [&]() -> CachePolicy* { return &policy; };
  const ScaleResult r = generate_scales(*var.model.transformer, *var.model.vqvae, labels, params, hooks);
  EXPECT_EQ(policy.checks, config.depth * config.scales());
  EXPECT_LT(r.memory.bytes_logical, full.memory.bytes_logical);
  EXPECT_TRUE(at::isfinite(r.f_hat).all().item<bool>());

  // Through a session: calibrated at first use (or from the bundle's file), less
  // KV than the full cache, the same image from the kept calibration.
  GenerationRequest req;
  req.model_path = var.dir.path().string();
  req.class_ids = {2};
  req.device = "cpu";
  req.threads = 1;
  req.policy = parse_policy_spec("hack:budget=30");
  GenerationSession session;
  const GenerationResult a = session.run(req);
  EXPECT_LT(a.kv_bytes_logical_final, a.kv_bytes_full);
  EXPECT_EQ(session.run(req).tokens, a.tokens);
  const HeadVarianceProfile measured = calibrate_head_variance(var.model, {0, 1, 2, 3, 4}, params);
  measured.save((var.dir.path() / kHeadVarianceProfileFile).string());
  GenerationSession from_file;
  EXPECT_LT(from_file.run(req).kv_bytes_logical_final, a.kv_bytes_full);
}

TEST(ScalePolicyNames, HackIsListedForTheScaleFamilyAndChecked) {
  const PolicyDescription* hack = find_policy_entry("hack");
  ASSERT_NE(hack, nullptr);
  EXPECT_EQ(hack->families, std::vector<std::string>{"scale"});
  EXPECT_TRUE(hack->has_budget());
  SmallVar var;
  const io::ModelBundle bundle = io::ModelBundle::open(var.dir.path().string());
  const ModelFamily& family = find_model_family("var");
  const auto& calibrated = family.description().calibrated_policies;
  EXPECT_NE(std::find(calibrated.begin(), calibrated.end(), "hack"), calibrated.end());
  PolicyCheck check;
  check.cfg_scale = 1.5;
  for (const std::string spec : {"hack", "hack:budget=30,contextual=1/3,ratio=1/4", "hack:rho=1/2,sinks=0"}) {
    EXPECT_TRUE(policy_spec_problem(spec).empty()) << spec;
    EXPECT_NO_THROW(family.check_policy(bundle, spec, check)) << spec;
  }
  try {
    family.check_policy(bundle, "hack:budget=10", check);
    FAIL() << "a budget below the sink scales must be refused";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("policy hack: budget 10 tokens is impossible"), std::string::npos) << e.what();
  }
}
