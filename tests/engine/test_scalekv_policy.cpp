// ScaleKV (§3.3, Eq. 2-5): the patch-centroid observation window, the Attention
// Selectivity Index and its Z-scores, the drafter / refiner budgets of Eq. 4, which
// entries survive on a hand-built scale cache (with the paper's scoring and the
// authors' release's, scoring=official), the calibration on a tiny random
// VAR model, generations that keep every layer's budget after every layer, and
// the names of the scale family's policies as the CLI and the bench parse them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/attention_selectivity_meter.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/policy_catalog.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scalekv_policy.h"
#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"
#include "engine/models/generation_session.h"
#include "engine/models/var/scalekv_calibration.h"
#include "engine/models/var/var_generation.h"
#include "tests/engine/scale_context.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_var.h"

using namespace kvs;
using kvs::test::scale_context;

namespace {

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

// Layer `drafter` is the least selective at every scale, the others alike.
LayerSelectivityProfile profile_with_drafter(const PolicyContext& c, int64_t drafter) {
  LayerSelectivityProfile p = LayerSelectivityProfile::uniform(c, 16);
  for (int64_t k = 0; k < p.scales(); ++k) {
    p.current_ratio[static_cast<size_t>(drafter * p.scales() + k)] = 0.1;
    p.history_top_k[static_cast<size_t>(drafter * p.scales() + k)] = 0.1;
  }
  return p;
}

}  // namespace

TEST(ScaleKv, ObservationWindowIsThePatchCentroids) {
  // 2x2 patches of a 3x3 map: bands [0,1) and [1,3), centres 0 and 1.
  EXPECT_EQ(patch_centroid_tokens(3, 4), (std::vector<int64_t>{0, 1, 3, 4}));
  // 4x4 patches of an 8x8 map: bands of two rows, centres 0, 2, 4, 6.
  const std::vector<int64_t> eight = patch_centroid_tokens(8, 16);
  ASSERT_EQ(eight.size(), 16u);
  EXPECT_EQ(eight[0], 0);
  EXPECT_EQ(eight[1], 2);
  EXPECT_EQ(eight[4], 16);
  EXPECT_EQ(eight[15], 6 * 8 + 6);
  // 16x16 (VAR's last scale on the demo): bands of four, centres 1, 5, 9, 13.
  EXPECT_EQ(patch_centroid_tokens(16, 16)[5], 5 * 16 + 5);
  // Fewer rows than patches: every token is its own patch.
  EXPECT_EQ(patch_centroid_tokens(3, 16), range(0, 9));
  EXPECT_THROW(patch_centroid_tokens(4, 12), InvalidArgumentError);
}

TEST(ScaleKv, SelectivityIndexIsTheProductAndDraftersHaveTheLowestZ) {
  const PolicyContext c = scale_context({1, 4, 9, 16}, 3);
  LayerSelectivityProfile p = LayerSelectivityProfile::uniform(c, 16);
  // Scale 2: ASI 0.2 x 0.5 = 0.1 (layer 0), 0.25 (layer 1), 0.4 (layer 2).
  p.current_ratio[0 * 4 + 2] = 0.2;
  p.current_ratio[2 * 4 + 2] = 0.8;
  // Scale 3: layer 2 the least selective.
  p.history_top_k[2 * 4 + 3] = 0.1;
  EXPECT_DOUBLE_EQ(p.asi(0, 2), 0.1);
  EXPECT_DOUBLE_EQ(p.asi(2, 2), 0.4);
  // Z within scale 2: mean 0.25, sigma sqrt(0.015).
  EXPECT_NEAR(p.z_score(0, 2), -0.15 / std::sqrt(0.015), 1e-6);
  EXPECT_NEAR(p.z_score(1, 2), 0.0, 1e-6);
  // All alike at scale 1: Z = 0 for every layer.
  EXPECT_DOUBLE_EQ(p.z_score(1, 1), 0.0);
  // Two drafters among scales 2 and 3: (0, 2) and (2, 3), the lowest Z of each.
  const std::vector<uint8_t> d = p.drafters({2, 3}, 2);
  for (int64_t l = 0; l < 3; ++l)
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(d[static_cast<size_t>(l * 4 + k)] != 0, (l == 0 && k == 2) || (l == 2 && k == 3)) << l << " " << k;
  // Ties go to the lower scale, then the lower layer.
  const std::vector<uint8_t> tie = LayerSelectivityProfile::uniform(c, 16).drafters({1, 2}, 2);
  EXPECT_TRUE(tie[0 * 4 + 1] && tie[1 * 4 + 1] && !tie[0 * 4 + 2]);
  // Another model's profile is refused.
  EXPECT_THROW(p.check_matches(scale_context({1, 4, 9}, 3)), InvalidArgumentError);
}

namespace {

// `c` with the calibration the VAR session would answer ScaleKV with.
PolicyContext with_selectivity(PolicyContext c, const LayerSelectivityProfile& profile) {
  auto calibrations = std::make_shared<FixedCalibrations>();
  calibrations->selectivity = std::make_shared<const LayerSelectivityProfile>(profile);
  c.calibrations = calibrations;
  return c;
}

}  // namespace

TEST(ScaleKv, BudgetsFollowEq4AtEveryCompressedScale) {
  // 4 layers, c_k = 1, 5, 14, 30, 55, 91; B_u = 20 compresses scales 3, 4, 5 (12 pairs,
  // 3 drafters: layer 2 at each). Refiners: B_r(k) = 10 - 2 k' (k' from scale 3).
  const PolicyContext c = scale_context({1, 4, 9, 16, 25, 36}, 4);
  const std::string spec = "scalekv:budget=20,drafters=1/4,refiner_start=1/2,decay=1/10,window=4";
  EXPECT_FALSE(dynamic_cast<ScaleKvPolicy&>(*make_policy(spec, c)).calibrated());
  auto made = make_policy(spec, with_selectivity(c, profile_with_drafter(c, 2)));
  auto& policy = dynamic_cast<ScaleKvPolicy&>(*made);
  EXPECT_TRUE(policy.calibrated());
  for (int64_t k = 0; k < 6; ++k)
    for (int64_t l = 0; l < 4; ++l) EXPECT_EQ(policy.is_drafter(l, k), l == 2 && k >= 3) << l << " " << k;
  // Uncompressed scales keep everything.
  EXPECT_EQ(policy.layer_budget(0, 2), 14);
  // Scale 3: drafters could take 80 - 3 x 10 = 50 > 30 tokens: capped at 30, the
  // refiners get the rest, (80 - 30) / 3 = 16.
  EXPECT_EQ(policy.layer_budget(2, 3), 30);
  EXPECT_EQ(policy.layer_budget(0, 3), 16);
  // Scale 4: 80 - 3 x 8 = 56 > 55: capped at 55, refiners (80 - 55) / 3 = 8.
  EXPECT_EQ(policy.layer_budget(2, 4), 55);
  EXPECT_EQ(policy.layer_budget(1, 4), 8);
  // Scale 5: B_r = 6, the drafter 80 - 18 = 62.
  EXPECT_EQ(policy.layer_budget(3, 5), 6);
  EXPECT_EQ(policy.layer_budget(2, 5), 62);
  EXPECT_EQ(policy.budget_tokens(), 62);
  // Never more memory than the uniform budget at any scale.
  for (int64_t k = 3; k < 6; ++k) {
    int64_t sum = 0;
    for (int64_t l = 0; l < 4; ++l) sum += policy.layer_budget(l, k);
    EXPECT_LE(sum, 4 * 20) << k;
    EXPECT_GE(sum, 4 * 20 - 3) << k;  // only floor rounding is lost
  }
  // Without drafters every layer keeps the uniform budget.
  auto uniform = make_policy("scalekv:budget=20,drafters=0,window=4", c);
  EXPECT_EQ(dynamic_cast<ScaleKvPolicy&>(*uniform).layer_budget(1, 4), 20);
  // Clear errors.
  EXPECT_NE(test::policy_error("scalekv:budget=16", c).find("policy scalekv: budget 16 tokens is impossible"),
            std::string::npos);
  EXPECT_NE(test::policy_error("scalekv:window=12", c).find("window 12 is not a square"), std::string::npos);
  EXPECT_NE(test::policy_error("scalekv:kernel=4", c).find("kernel must be an odd number"), std::string::npos);
  EXPECT_NE(test::policy_error("scalekv:refiner_start=0", c).find("refiner_start"), std::string::npos);
  EXPECT_NE(test::policy_error("scalekv:pooling=median", c).find("must be one of avg, max"), std::string::npos);
  EXPECT_NE(test::policy_error("scalekv", test::small_policy_context(4)).find("next-scale (VAR) models only"),
            std::string::npos);
}

TEST(ScaleKv, KeepsTheWindowAndTheEntriesItsQueriesAttendTo) {
  // One layer, scales 1, 4, 9 (c = 1, 5, 14), B = 10, a 2x2 window: scale 2's window
  // is its tokens 0, 1, 3, 4 (positions 5, 6, 8, 9). Head 0's window queries look
  // for positions 2 and 12, head 1's for position 1.
  const PolicyContext c = scale_context({1, 4, 9}, 1);
  auto made = make_policy("scalekv:budget=10,drafters=0,window=4,kernel=1", c);
  auto& policy = dynamic_cast<ScaleKvPolicy&>(*made);
  KvStore store(1, 1, 2, 4, c.image_tokens(), at::TensorOptions().dtype(at::kFloat));
  auto keys_for = [&](int64_t u) {
    const int64_t t = c.unit_tokens[static_cast<size_t>(u)], begin = c.unit_begin(u);
    at::Tensor k = at::zeros({1, 2, t, 4});
    for (int64_t i = 0; i < t; ++i) {
      const int64_t pos = begin + i;
      if (pos == 2 || pos == 12) k[0][0][i][0] = 10.0f;
      if (pos == 1) k[0][1][i][1] = 10.0f;
    }
    return k;
  };
  for (int64_t u = 0; u < 3; ++u) {
    const int64_t t = c.unit_tokens[static_cast<size_t>(u)];
    const at::Tensor k = keys_for(u);
    store.append(0, k, k, range(c.unit_begin(u), c.unit_begin(u) + t));
    at::Tensor q = at::zeros({1, 2, t, 4});
    for (int64_t i : policy.window_tokens(u)) {
      q[0][0][i][0] = 1.0f;
      q[0][1][i][1] = 1.0f;
    }
    policy.observe_queries(0, u, q);
    policy.before_unit_attention(store, 0, u);
    policy.after_unit_layer(store, 0, u);
    for (int64_t h = 0; h < 2; ++h)
      EXPECT_LE(static_cast<int64_t>(store.positions(0, 0, h).size()), policy.layer_budget(0, u));
  }
  // Evict 4 of the 14: the window stays, then the best voted; equal votes lose the older first.
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{2, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(store.positions(0, 0, 1), (std::vector<int64_t>{1, 5, 6, 7, 8, 9, 10, 11, 12, 13}));
}

namespace {

// One layer, one head of width 4 (head_dim 4: logits are q.k / 2), no
// condition entries: appends every scale of `c` with the keys (and values)
// `key_of(position)` and the queries `query_of(scale, token)`, and runs the
// policy's hooks after each, as a VAR layer does.
template <class Keys, class Queries>
KvStore run_one_head(const PolicyContext& c, ScaleKvPolicy& policy, Keys key_of, Queries query_of) {
  KvStore store(1, 1, 1, 4, c.image_tokens(), at::TensorOptions().dtype(at::kFloat));
  for (int64_t u = 0; u < static_cast<int64_t>(c.unit_tokens.size()); ++u) {
    const int64_t t = c.unit_tokens[static_cast<size_t>(u)], begin = c.unit_begin(u);
    at::Tensor k = at::zeros({1, 1, t, 4}), q = at::zeros({1, 1, t, 4});
    for (int64_t i = 0; i < t; ++i) {
      const std::array<float, 4> kv = key_of(begin + i), qv = query_of(u, i);
      for (int64_t j = 0; j < 4; ++j) {
        k[0][0][i][j] = kv[static_cast<size_t>(j)];
        q[0][0][i][j] = qv[static_cast<size_t>(j)];
      }
    }
    store.append(0, k, k, range(begin, begin + t));
    policy.observe_queries(0, u, q);
    policy.before_unit_attention(store, 0, u);
    policy.after_unit_layer(store, 0, u);
  }
  return store;
}

}  // namespace

TEST(ScaleKv, OfficialWindowIsTheReleasesPatchCentres) {
  // Patches of floor(side / 2) = 2 rows on a 5x5 map: offsets 0, rows and columns 0 and 2;
  // the last row and column are in no patch (the paper's bands put centres at 0 and 3).
  EXPECT_EQ(official_window_tokens(5, 4), (std::vector<int64_t>{0, 2, 10, 12}));
  EXPECT_EQ(patch_centroid_tokens(5, 4), (std::vector<int64_t>{0, 3, 15, 18}));
  // 10x10 with 4x4 patches of 2: 0, 2, 4, 6 (the paper: 0, 3, 5, 8).
  const std::vector<int64_t> ten = official_window_tokens(10, 16);
  EXPECT_EQ(std::vector<int64_t>(ten.begin(), ten.begin() + 4), (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(ten.back(), 6 * 10 + 6);
  // Where the side divides, both are the same: 16x16, centres 1, 5, 9, 13.
  EXPECT_EQ(official_window_tokens(16, 16), patch_centroid_tokens(16, 16));
  // Fewer rows than patches: no map window (the cache's last entries instead).
  EXPECT_TRUE(official_window_tokens(3, 16).empty());
}

TEST(ScaleKv, OfficialScoringMaxPoolsRawLogitsWithTheWindowMasked) {
  // Scales 1, 4, 16 (c = 1, 5, 21), B = 10, a 2x2 window, kernel 3: only scale 2
  // is cut. Its window is tokens 0, 2, 8, 10 = positions 5, 7, 13, 15; 6 of the
  // other 17 entries stay. Window queries: tokens 0 and 2 are (2, 0, 0, 0),
  // tokens 8 and 10 are (0, 2, 0, 0), so with keys (x, y, 0, 0) an entry's logit
  // is x for the first two and y for the others: summed, s = 2x + 2y.
  const PolicyContext c = scale_context({1, 4, 16}, 1, 1);
  auto made = make_policy("scalekv:budget=10,drafters=0,window=4,kernel=3,scoring=official", c);
  auto& policy = dynamic_cast<ScaleKvPolicy&>(*made);
  EXPECT_EQ(policy.window_tokens(2), (std::vector<int64_t>{0, 2, 8, 10}));
  auto key_of = [](int64_t pos) -> std::array<float, 4> {
    switch (pos) {
      case 1: return {2.5f, 2.5f, 0, 0};   // s = 10
      case 18: return {2, 2, 0, 0};        // s = 8
      case 11: return {1.5f, 1.5f, 0, 0};  // s = 6
      case 7: return {5, 5, 0, 0};         // window: s = 20, masked
      case 14: return {6, -10, 0, 0};      // s = -8, between window entries 13 and 15
      case 5:
      case 13:
      case 15: return {0, 0, 0, 0};          // window
      default: return {-0.5f, -0.5f, 0, 0};  // s = -2
    }
  };
  auto query_of = [](int64_t unit, int64_t token) -> std::array<float, 4> {
    if (unit != 2) return {0, 0, 0, 0};
    if (token == 0 || token == 2) return {2, 0, 0, 0};
    if (token == 8 || token == 10) return {0, 2, 0, 0};
    return {0, 0, 0, 0};
  };
  const KvStore store = run_one_head(c, policy, key_of, query_of);
  // Max pooling (kernel 3) over slot order, the window's entries -inf:
  //   0, 1, 2 -> 10 (entry 1's peak); 17, 18, 19 -> 8; 10, 11, 12 -> 6; 14 -> -8;
  //   the rest -2. The six best: 0, 1, 2, 17, 18, 19.
  // Had the window not been masked, entry 7's 20 would have reached 6 and 8 and
  // kept them; had the votes been softmax probabilities, 14 (the first queries'
  // largest logit, 6) would have been the best voted; averaged, 12 (next to the
  // window) would have beaten 17-19 with the paper's average over the candidates.
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 2, 5, 7, 13, 15, 17, 18, 19}));

  // The same cache scored as the paper states it keeps what the softmax votes favour.
  auto paper = make_policy("scalekv:budget=10,drafters=0,window=4,kernel=3,pooling=max", c);
  const KvStore by_paper = run_one_head(c, dynamic_cast<ScaleKvPolicy&>(*paper), key_of, query_of);
  const std::vector<int64_t> kept = by_paper.positions(0, 0, 0);
  EXPECT_NE(std::find(kept.begin(), kept.end(), 14), kept.end());
}

TEST(ScaleKvOfficial, OnAMapWithFewerRowsThanPatchesTheWindowIsTheCachesLastEntries) {
  // Scales 1, 4, 9, 16 (c = 1, 5, 14, 30), a 5x5 window (N = 25), B = 27: scale 3
  // (4x4, fewer rows than 5) is cut. The window is the last 25 entries
  // (positions 5-29); the 9 of them before scale 3 read scale 3's first query,
  // so query 0 counts 10 times, queries 1-15 once. With query 0 = (2, 0, 0, 0)
  // and the others (0, 2, 0, 0), an entry (x, y, 0, 0) scores 10x + 15y: of
  // positions 0-4, 1 (15) and 0 (10) stay, 3 (9), 2 (8) and 4 (0) go. Each map
  // query read once would have kept 1 and 3.
  const PolicyContext c = scale_context({1, 4, 9, 16}, 1, 1);
  auto made = make_policy("scalekv:budget=27,drafters=0,window=25,kernel=1,scoring=official", c);
  auto& policy = dynamic_cast<ScaleKvPolicy&>(*made);
  EXPECT_TRUE(policy.window_tokens(3).empty());
  EXPECT_EQ(policy.window_size(3), 25);
  auto key_of = [](int64_t pos) -> std::array<float, 4> {
    switch (pos) {
      case 0: return {1, 0, 0, 0};
      case 1: return {0, 1, 0, 0};
      case 2: return {0.8f, 0, 0, 0};
      case 3: return {0, 0.6f, 0, 0};
      default: return {0, 0, 0, 0};
    }
  };
  auto query_of = [](int64_t unit, int64_t token) -> std::array<float, 4> {
    if (unit != 3) return {0, 0, 0, 0};
    return token == 0 ? std::array<float, 4>{2, 0, 0, 0} : std::array<float, 4>{0, 2, 0, 0};
  };
  const KvStore store = run_one_head(c, policy, key_of, query_of);
  std::vector<int64_t> expected = {0, 1};
  for (int64_t p : range(5, 30)) expected.push_back(p);
  EXPECT_EQ(store.positions(0, 0, 0), expected);
}

TEST(ScaleKvOfficial, ScoringIsAParameterAndTheReleaseMaxPools) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25, 36}, 2);
  const PolicyDescription* entry = find_policy_entry("scalekv");
  ASSERT_NE(entry, nullptr);
  const PolicyParamSpec* scoring = entry->find_param("scoring");
  ASSERT_NE(scoring, nullptr);
  EXPECT_EQ(scoring->default_value, "paper");
  EXPECT_EQ(scoring->choices, (std::vector<std::string>{"paper", "official"}));
  EXPECT_EQ(dynamic_cast<ScaleKvPolicy&>(*make_policy("scalekv:budget=20", c)).scoring(), ScaleKvScoring::Paper);
  EXPECT_EQ(dynamic_cast<ScaleKvPolicy&>(*make_policy("scalekv:budget=20,scoring=official", c)).scoring(),
            ScaleKvScoring::Official);
  EXPECT_NO_THROW(make_policy("scalekv:budget=20,scoring=official,pooling=max", c));
  EXPECT_NE(test::policy_error("scalekv:budget=20,scoring=official,pooling=avg", c).find("pooling=avg applies to"),
            std::string::npos);
  EXPECT_NE(test::policy_error("scalekv:scoring=softmax", c).find("must be one of paper, official"), std::string::npos);
}

namespace {

using namespace kvs::var;

struct SmallVar : test::TinyVar {
  SmallVar() : test::TinyVar(test::tiny_var_config(3, {1, 2, 3, 4, 5, 6}), 7) {}
};

// ScaleKV that checks every layer's budget right after its cut.
class CheckedScaleKv : public ScaleKvPolicy {
 public:
  using ScaleKvPolicy::ScaleKvPolicy;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override {
    ScaleKvPolicy::after_unit_layer(store, layer, unit);
    for (int64_t row = 0; row < store.rows(); ++row)
      for (int64_t h = 0; h < store.kv_heads(); ++h) EXPECT_LE(store.length(layer, row, h), layer_budget(layer, unit));
    ++checks;
  }
  int64_t checks = 0;
};

}  // namespace

TEST(ScaleKv, CalibrationMeasuresShareOfTheScaleAndTopKOfTheHistory) {
  SmallVar var;
  ScaleParams params;
  params.seed = 3;
  const LayerSelectivityProfile p = calibrate_attention_selectivity(var.model, {0, 2}, params, 4);
  EXPECT_EQ(p.samples, 2);
  EXPECT_EQ(p.layers, 3);
  EXPECT_EQ(p.top_k, 4);
  for (int64_t l = 0; l < 3; ++l) {
    // The first scale (one token) attends only to itself.
    EXPECT_NEAR(p.current_ratio[static_cast<size_t>(l * 6)], 1.0, 1e-6);
    EXPECT_EQ(p.history_top_k[static_cast<size_t>(l * 6)], 0.0);
    for (int64_t k = 1; k < 6; ++k) {
      const double cur = p.current_ratio[static_cast<size_t>(l * 6 + k)];
      const double top = p.history_top_k[static_cast<size_t>(l * 6 + k)];
      EXPECT_GT(cur, 0.0);
      EXPECT_GT(top, 0.0);
      EXPECT_LE(cur + top, 1.0 + 1e-6);
    }
    // Scale 1 has one history token (K' = 4 covers it): the two terms sum to 1.
    EXPECT_NEAR(p.current_ratio[static_cast<size_t>(l * 6 + 1)] + p.history_top_k[static_cast<size_t>(l * 6 + 1)], 1.0,
                1e-5);
  }
  // With K' past every history, the history term is the whole history mass.
  const LayerSelectivityProfile all = calibrate_attention_selectivity(var.model, {0, 2}, params, 1000);
  for (size_t i = 0; i < all.current_ratio.size(); ++i)
    EXPECT_NEAR(all.current_ratio[i] + all.history_top_k[i], 1.0, 1e-5) << i;
  EXPECT_EQ(all.current_ratio, p.current_ratio);  // the same images
}

TEST(ScaleKv, GenerationKeepsEveryLayersBudgetAfterEveryLayer) {
  SmallVar var;
  const VarConfig& config = var.model.transformer->config();
  ScaleParams params;
  params.seed = 5;
  const PolicyContext context = scale_policy_context(config, 2, true, params.seed);
  ScaleKvOptions o;
  o.budget = 30;  // of 91 tokens: scales 4 and 5 are compressed
  o.drafters = 1.0 / 3.0;
  CheckedScaleKv policy(with_selectivity(context, calibrate_attention_selectivity(var.model, {1, 3}, params, 16)), o);
  int64_t drafters = 0;
  for (int64_t l = 0; l < 3; ++l) drafters += policy.is_drafter(l, 4) + policy.is_drafter(l, 5);
  EXPECT_EQ(drafters, 2);
  const at::Tensor labels = at::tensor({1, 3}, at::kLong);
  const ScaleResult full = generate_scales(*var.model.transformer, *var.model.vqvae, labels, params);
  ScaleHooks hooks;
  hooks.policy = [&]() -> CachePolicy* { return &policy; };
  const ScaleResult r = generate_scales(*var.model.transformer, *var.model.vqvae, labels, params, hooks);
  EXPECT_EQ(policy.checks, config.depth * config.scales());
  EXPECT_LT(r.memory.bytes_logical, full.memory.bytes_logical);
  EXPECT_TRUE(at::isfinite(r.f_hat).all().item<bool>());
  // A layer is cut only after it attended: the first compressed scale (4) is still
  // drawn from the full cache's logits, the next one is not.
  EXPECT_TRUE(at::equal(r.ids[4], full.ids[4]));

  // Through a session: calibrated at first use, less KV than the full cache.
  GenerationRequest req;
  req.model_path = var.dir.path().string();
  req.class_ids = {2};
  req.device = "cpu";
  req.threads = 1;
  req.policy = parse_policy_spec("scalekv:budget=30");
  GenerationSession session;
  const GenerationResult a = session.run(req);
  EXPECT_LT(a.kv_bytes_logical_final, a.kv_bytes_full);
  EXPECT_EQ(session.run(req).tokens, a.tokens);  // the kept calibration gives the same image
}

TEST(ScalePolicyNames, TheScaleFamilyParsesItsPolicies) {
  const PolicyDescription* scalekv = find_policy_entry("scalekv");
  ASSERT_NE(scalekv, nullptr);
  EXPECT_EQ(scalekv->families, std::vector<std::string>{"scale"});
  EXPECT_TRUE(scalekv->has_budget());
  for (const std::string name : {"h2o", "snapkv", "streaming"}) {
    const PolicyDescription* entry = find_policy_entry(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_NE(std::find(entry->families.begin(), entry->families.end(), "scale"), entry->families.end()) << name;
  }
  // What bench and generate check before a run, on a VAR bundle.
  SmallVar var;
  const io::ModelBundle bundle = io::ModelBundle::open(var.dir.path().string());
  const ModelFamily& family = find_model_family("var");
  PolicyCheck check;
  check.cfg_scale = 1.5;
  for (const std::string spec : {"scalekv", "scalekv:rho=1/2,drafters=1/3,pooling=max", "h2o:rho=1/4", "snapkv:rho=1/4",
                                 "streaming:rho=1/4,sink_scales=0", "streaming:rho=1/4"}) {
    EXPECT_TRUE(policy_spec_problem(spec).empty()) << spec;
    EXPECT_NO_THROW(family.check_policy(bundle, spec, check)) << spec;
  }
  try {
    family.check_policy(bundle, "snapkv:window=4", check);
    FAIL() << "a raster observation window on a VAR model must be refused";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("window does not apply to next-scale models"), std::string::npos) << e.what();
  }
}

TEST(ScaleKvCalibrationFile, RoundTripsAndRefusesWhatIsNotACalibration) {
  const PolicyContext c = scale_context({1, 4, 9, 16}, 3);
  LayerSelectivityProfile p = profile_with_drafter(c, 1);
  p.model = "tiny";
  p.classes = {0, 3};
  p.samples = 2;
  p.seed = 9;
  p.cfg = 1.5;
  test::TempDir dir;
  const std::string path = dir.file(kScaleKvCalibrationFile);
  p.save(path);
  const LayerSelectivityProfile back = LayerSelectivityProfile::load(path);
  EXPECT_EQ(back.model, "tiny");
  EXPECT_EQ(back.layers, 3);
  EXPECT_EQ(back.unit_tokens, p.unit_tokens);
  EXPECT_EQ(back.top_k, 16);
  EXPECT_EQ(back.classes, p.classes);
  EXPECT_EQ(back.seed, 9u);
  EXPECT_EQ(back.current_ratio, p.current_ratio);
  EXPECT_EQ(back.history_top_k, p.history_top_k);
  EXPECT_EQ(back.drafters({1, 2, 3}, 3), p.drafters({1, 2, 3}, 3));

  auto refused = [&](const std::string& text, const std::string& why) {
    try {
      LayerSelectivityProfile::from_json_text(text, "x/scalekv_calibration.json");
      ADD_FAILURE() << "accepted: " << text.substr(0, 80);
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("x/scalekv_calibration.json: not a ScaleKV calibration"), std::string::npos) << m;
      EXPECT_NE(m.find(why), std::string::npos) << m;
    }
  };
  const std::string good = p.to_json_text();
  auto with = [&](const std::string& key, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(good);
    j[key] = nlohmann::json::parse(value);
    return j.dump();
  };
  refused("{", "invalid JSON");
  refused(R"({"format": "kvstudio-scale-attention-profile", "version": 1})", "format is not");
  refused(with("version", "2"), "unsupported version 2");
  refused(with("layers", "0"), "layers (1..4096)");
  refused(with("layers", "100000000"), "layers (1..4096)");
  refused(with("unit_tokens", "[1, 0, 9, 16]"), "a scale has no tokens");
  refused(with("top_k", "0"), "top_k must be >= 1");
  refused(with("current_ratio", "[0.5]"), "need 12 values each");
  refused(with("history_top_k", "\"many\""), "field \"history_top_k\" must be a list, got a string");
  nlohmann::json j = nlohmann::json::parse(good);
  j["history_top_k"][5] = 1.5;
  refused(j.dump(), "layer 1, scale 1: 1.5");
  j["history_top_k"][5] = -0.1;
  refused(j.dump(), "is not an attention share");

  // Another model's: refused with the way out.
  try {
    back.check_matches(scale_context({1, 4, 9, 16}, 4));
    FAIL() << "a 3-layer calibration on a 4-layer model";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("calibrate --policy scalekv"), std::string::npos) << e.what();
  }
}

TEST(ScaleKvCalibrationFile, ASessionReadsTheBundlesFile) {
  SmallVar var;
  const std::string path = var.dir.file(kScaleKvCalibrationFile);
  GenerationRequest req;
  req.model_path = var.dir.path().string();
  req.class_ids = {1};
  req.device = "cpu";
  req.threads = 1;
  req.policy = parse_policy_spec("scalekv:budget=30");
  // A corrupt file is an error that names it (not silently measured again).
  io::write_file_atomic(path, "{\"format\": \"kvstudio-scalekv-calibration\", \"version\": 1}");
  try {
    GenerationSession().run(req);
    FAIL() << "a corrupt calibration file was ignored";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not a ScaleKV calibration"), std::string::npos) << e.what();
  }
  // Another model's (4 layers for this 3-layer one): refused with the way out.
  const PolicyContext four = scale_context({1, 4, 9, 16, 25, 36}, 4);
  LayerSelectivityProfile::uniform(four, 16).save(path);
  try {
    GenerationSession().run(req);
    FAIL() << "a calibration of another model was used";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("calibrate --policy scalekv"), std::string::npos) << e.what();
  }
  // This model's, measured for another K': the run measures its own and succeeds.
  ScaleParams params;
  LayerSelectivityProfile other_k = calibrate_attention_selectivity(var.model, {0, 4}, params, 4);
  other_k.save(path);
  const GenerationResult measured = GenerationSession().run(req);
  EXPECT_LT(measured.kv_bytes_logical_final, measured.kv_bytes_full);
  // What the session measures on first use, stored: the same image as without the file.
  std::filesystem::remove(path);
  const GenerationResult first_use = GenerationSession().run(req);
  EXPECT_EQ(first_use.tokens, measured.tokens);
}
