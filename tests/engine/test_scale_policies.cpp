// The next-scale (VAR) policies: AMS-KV (Algorithms 1-2), streaming, H2O and SnapKV
// over scales and HeatKV (Eq. 2-5, Algorithms 1-2 with its calibration), on hand-built scale caches
// and on tiny random VAR models; every scale policy keeps its budget after every
// layer of every scale.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <tuple>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/amskv_policy.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/hack_policy.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/cache/policies/scale_groups_policy.h"
#include "engine/cache/policies/streaming_policy.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/var/hack_calibration.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_random_init.h"
#include "engine/models/var/var_run.h"
#include "engine/session/model_family.h"
#include "test_helpers.h"
#include "tests/engine/scale_context.h"
#include "tests/engine/tiny_var.h"

using namespace kvs;
using kvs::test::scale_context;

namespace {

KvStore store_for(const PolicyContext& c) {
  const int64_t rows = c.cfg ? 2 * c.batch : c.batch;
  return KvStore(c.n_layer, rows, c.kv_heads, c.head_dim, c.image_tokens(), at::TensorOptions().dtype(at::kFloat));
}

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Appends unit u to layer 0 with the given keys and runs the policy's per-layer hooks;
// returns the positions the unit's queries would see (row 0, head 0).
std::vector<int64_t> run_unit(CachePolicy& policy, KvStore& store, const PolicyContext& c, int64_t u,
                              const at::Tensor& keys, std::vector<int64_t>* after = nullptr) {
  const int64_t t = c.unit_tokens[static_cast<size_t>(u)];
  store.append(0, keys, keys, range(c.unit_begin(u), c.unit_begin(u) + t));
  if (policy.wants_unit_keys()) policy.observe_unit_keys(0, u, keys);
  policy.before_unit_attention(store, 0, u);
  std::vector<int64_t> seen = store.positions(0, 0, 0);
  policy.after_unit_layer(store, 0, u);
  policy.after_unit(store, u);
  if (after) *after = store.positions(0, 0, 0);
  return seen;
}

at::Tensor random_keys(int64_t rows, int64_t heads, int64_t t, int64_t seed) {
  at::manual_seed(seed);
  return at::randn({rows, heads, t, 4});
}

}  // namespace

TEST(AmsKv, DefaultsFollowThePaperAndCacheEfficientLayersRollWithinCmin) {
  // Scales 1, 4, 9, 16, 25: C_cds = 5 tokens, C_min = 16 + 5, C_max = 25 + 16 + 5.
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  for (const std::string order : {"attend_first", "evict_first"}) {
    SCOPED_TRACE(order);
    auto policy = make_policy("amskv:theta=-1e9,order=" + order, c);  // never promoted
    auto* ams = dynamic_cast<AmsKvPolicy*>(policy.get());
    ASSERT_NE(ams, nullptr);
    EXPECT_EQ(ams->condensed_tokens(), 5);
    EXPECT_EQ(ams->c_min(), 21);
    EXPECT_EQ(ams->c_max(), 46);
    EXPECT_EQ(ams->budget_tokens(), 46);
    KvStore store = store_for(c);
    std::vector<int64_t> after;
    EXPECT_EQ(run_unit(*ams, store, c, 0, random_keys(1, 2, 1, 1), &after), range(0, 1));
    EXPECT_EQ(run_unit(*ams, store, c, 1, random_keys(1, 2, 4, 2), &after), range(0, 5));
    EXPECT_EQ(run_unit(*ams, store, c, 2, random_keys(1, 2, 9, 3), &after), range(0, 14));
    // Scale 3 overflows C_min = 21 (30 entries): CLRU keeps the condensed 5 and the
    // 16 newest; attend-first after the scale has seen all 30, evict-first before.
    const std::vector<int64_t> rolled = concat(range(0, 5), range(14, 30));
    EXPECT_EQ(run_unit(*ams, store, c, 3, random_keys(1, 2, 16, 4), &after),
              order == "attend_first" ? range(0, 30) : rolled);
    EXPECT_EQ(after, rolled);
    EXPECT_FALSE(ams->cache_demanding(0, 0));
    // Scale 4 (25 tokens) exceeds the budget C_min: not cached (Algorithm 1, line 13-14),
    // but its queries still see it (its self-attention) and C_{i-1}.
    EXPECT_EQ(run_unit(*ams, store, c, 4, random_keys(1, 2, 25, 5), &after), concat(rolled, range(30, 55)));
    EXPECT_EQ(after, rolled);
    EXPECT_EQ(store.positions(0, 0, 1), after);  // every head of the layer alike
  }
}

// The order of attention and eviction: the paper's Algorithm 1 appends a scale
// and rolls the cache. Rolled before the scale attends (evict_first), a
// cache-efficient layer draws the penultimate scale from the condensed scales and
// itself only: Table 1's "Remove Local", its most harmful removal. By default the
// scale attends first, with the same peak (C_{i-1} plus the scale).
TEST(AmsKv, AScaleAttendsToItsLocalScalesBeforeTheLayerRolls) {
  // Scales 1, 4, 9, 16, 25, 36: C_cds = 5, C_min = 25 + 5 = 30.
  const PolicyContext c = scale_context({1, 4, 9, 16, 25, 36});
  auto run = [&](const std::string& spec) {
    auto policy = make_policy(spec, c);
    KvStore store = store_for(c);
    std::vector<int64_t> seen, after;
    int64_t peak = 0;
    for (int64_t u = 0; u <= 4; ++u) {
      const int64_t t = c.unit_tokens[static_cast<size_t>(u)];
      store.append(0, random_keys(1, 2, t, 60 + u), random_keys(1, 2, t, 70 + u),
                   range(c.unit_begin(u), c.unit_begin(u) + t));
      peak = std::max(peak, store.length(0, 0, 0));
      policy->before_unit_attention(store, 0, u);
      seen = store.positions(0, 0, 0);
      policy->after_unit_layer(store, 0, u);
      policy->after_unit(store, u);
      after = store.positions(0, 0, 0);
    }
    return std::make_tuple(seen, after, peak);
  };
  // Scale 4 (25 tokens) arrives on a cache of 30 (C_min): 55 entries, rolled to the
  // condensed 5 and the 25 newest, which are scale 4 itself.
  const auto [seen, after, peak] = run("amskv:theta=-1e9");
  EXPECT_EQ(seen, range(0, 55));  // scales 2 and 3, its local scales, are visible
  EXPECT_EQ(after, concat(range(0, 5), range(30, 55)));
  const auto [seen_first, after_first, peak_first] = run("amskv:theta=-1e9,order=evict_first");
  EXPECT_EQ(seen_first, concat(range(0, 5), range(30, 55)));  // the condensed scales and itself
  EXPECT_EQ(after_first, after);
  EXPECT_EQ(peak, 55);
  EXPECT_EQ(peak_first, peak);
}

// A budget under which CLRU keeps fewer recent tokens than a cached scale has
// (C_bgt - C_cds < t_i <= C_bgt) would cut that scale before it attends when the
// cache rolls first: evict_first refuses it; attend_first rolls after the scale
// has attended whole, keeping its newest C_bgt - C_cds tokens (Algorithm 2).
TEST(AmsKv, EvictFirstRefusesBudgetsThatWouldCutAScaleBeforeItAttends) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});  // C_cds = 5
  const std::string message = test::policy_error("amskv:c_min=20,order=evict_first", c);
  EXPECT_NE(message.find("c_min 20 tokens is impossible with order=evict_first: rolled before scale 3 attends, the "
                         "cache would keep 15 recent tokens, fewer than the scale's own 16"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("use c_min >= 21 (or below 16"), std::string::npos) << message;
  EXPECT_NE(test::policy_error("amskv:c_max=28,order=evict_first", c).find("c_max 28 tokens is impossible"),
            std::string::npos);
  EXPECT_NO_THROW(make_policy("amskv:c_min=21,order=evict_first", c));
  EXPECT_NO_THROW(make_policy("amskv:c_min=15,c_max=21,order=evict_first", c));  // scale 3 never cached under 15

  auto policy = make_policy("amskv:theta=-1e9,c_min=20", c);
  KvStore store = store_for(c);
  std::vector<int64_t> after;
  for (int64_t u = 0; u < 3; ++u) run_unit(*policy, store, c, u, random_keys(1, 2, c.unit_tokens[u], 80 + u));
  EXPECT_EQ(run_unit(*policy, store, c, 3, random_keys(1, 2, 16, 83), &after), range(0, 30));
  EXPECT_EQ(after, concat(range(0, 5), range(15, 30)));
}

// cds (AMS-KV Table 7: condensed scales {}, {0}, {0, 1}): the first cds scales
// survive CLRU, and C_min / C_max follow them. Same scales as above, never promoted.
TEST(AmsKv, CondensedScalesAreTheFirstCdsScalesThatClruKeeps) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  auto run = [&](const std::string& spec, int64_t c_min, int64_t c_max) {
    auto policy = make_policy(spec, c);
    auto& ams = dynamic_cast<AmsKvPolicy&>(*policy);
    EXPECT_EQ(ams.c_min(), c_min) << spec;
    EXPECT_EQ(ams.c_max(), c_max) << spec;
    KvStore store = store_for(c);
    std::vector<int64_t> after, seen;
    for (int64_t u = 0; u < 5; ++u)
      seen = run_unit(*policy, store, c, u, random_keys(1, 2, c.unit_tokens[u], 40 + u), &after);
    return std::make_pair(seen, after);
  };
  // cds = 0: C_min = 16; scale 3 overflows and CLRU keeps only its 16 newest tokens
  // (scale 3 itself); the last scale does not fit C_min and is not cached.
  auto [seen0, after0] = run("amskv:theta=-1e9,cds=0", 16, 41);
  EXPECT_EQ(after0, range(14, 30));
  EXPECT_EQ(seen0, range(14, 55));
  // cds = 1: the first scale (position 0) survives beside scale 3.
  auto [seen1, after1] = run("amskv:theta=-1e9,cds=1", 17, 42);
  EXPECT_EQ(after1, concat(range(0, 1), range(14, 30)));
  EXPECT_EQ(seen1, concat(concat(range(0, 1), range(14, 30)), range(30, 55)));
  // cds = 2 (the default): scales 0 and 1 (positions 0..4).
  auto [seen2, after2] = run("amskv:theta=-1e9,cds=2", 21, 46);
  EXPECT_EQ(after2, concat(range(0, 5), range(14, 30)));
}

TEST(AmsKv, LowSimilarityPromotesALayerToCmax) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  auto policy = make_policy("amskv:theta=1", c);  // any similarity (<= 0) is below: promoted at the first overflow
  auto* ams = dynamic_cast<AmsKvPolicy*>(policy.get());
  KvStore store = store_for(c);
  std::vector<int64_t> after;
  for (int64_t u = 0; u < 3; ++u) run_unit(*ams, store, c, u, random_keys(1, 2, c.unit_tokens[u], 10 + u), &after);
  EXPECT_FALSE(ams->cache_demanding(0, 0));
  EXPECT_EQ(run_unit(*ams, store, c, 3, random_keys(1, 2, 16, 13), &after), range(0, 30));  // 30 <= C_max: no rolling
  EXPECT_TRUE(ams->cache_demanding(0, 0));
  EXPECT_EQ(ams->layer_budget(0, 0), 46);
  // 55 > 46: scale 4 attends to all 55, then CLRU keeps the condensed 5 and the 41
  // newest (scales 3 and 4).
  EXPECT_EQ(run_unit(*ams, store, c, 4, random_keys(1, 2, 25, 14), &after), range(0, 55));
  EXPECT_EQ(after, concat(range(0, 5), range(14, 55)));
}

TEST(AmsKv, SimilarityIsTheMeanSquaredDifferenceToTheResizedPreviousKeys) {
  const PolicyContext c = scale_context({1, 4, 9});
  AmsKvOptions options;
  options.condensed_scales = 1;
  AmsKvPolicy ams(c, options);
  // Constant key maps resize to themselves: S = -(a - b)^2 exactly.
  ams.observe_unit_keys(0, 0, at::full({1, 2, 1, 4}, 0.5));
  EXPECT_TRUE(std::isnan(ams.last_similarity(0, 0)));
  ams.observe_unit_keys(0, 1, at::full({1, 2, 4, 4}, 0.25));
  EXPECT_DOUBLE_EQ(ams.last_similarity(0, 0), -0.0625);
  // A 2x2 map to 3x3 with bilinear interpolation: compare with a hand computation on one channel.
  at::Tensor prev = at::zeros({1, 2, 4, 4});
  prev.select(2, 1).fill_(1.0);  // the top-right cell of the 2x2 map
  ams.observe_unit_keys(0, 1, prev);
  ams.observe_unit_keys(0, 2, at::zeros({1, 2, 9, 4}));
  // Bilinear (align_corners=false) 2 -> 3: source coordinates 0, 0.5, 1 (clamped) -> weights of cell 1
  // per output column 0, 0.5, 1; rows likewise for cell row 0: 1, 0.5, 0.
  const double col[3] = {0, 0.5, 1}, row[3] = {1, 0.5, 0};
  double sum = 0;
  for (double r : row)
    for (double cc : col) sum += (r * cc) * (r * cc);
  EXPECT_NEAR(ams.last_similarity(0, 0), -sum / 9.0, 1e-7);
}

TEST(AmsKv, CfgPartnersMirrorTheConditionalRowAndErrorsAreClear) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25}, 1, 2, /*batch=*/1, /*cfg=*/true);
  auto policy = make_policy("amskv:theta=-1e9", c);
  KvStore store = store_for(c);
  for (int64_t u = 0; u < 5; ++u) run_unit(*policy, store, c, u, random_keys(2, 2, c.unit_tokens[u], 20 + u));
  EXPECT_EQ(store.positions(0, 1, 0), store.positions(0, 0, 0));
  EXPECT_EQ(store.positions(0, 1, 1), concat(range(0, 5), range(14, 30)));

  EXPECT_NE(test::policy_error("amskv", test::small_policy_context(4)).find("next-scale (VAR) models only"),
            std::string::npos);
  EXPECT_NE(test::policy_error("amskv:cds=4", c).find("cds 4 condensed scales is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("amskv:c_min=5", c).find("must exceed the 5 tokens of the condensed scales"),
            std::string::npos);
  EXPECT_NE(test::policy_error("amskv:c_min=50,c_max=40", c).find("c_min 50 exceeds c_max 40"), std::string::npos);
}

// allocation=uniform (AMS-KV Table 2's S1): a fixed number of layers, spread
// evenly over the depth, holds C_max from the first scale; the others C_min, with
// no similarity test. Same scales as above: C_cds = 5, C_min = 21, C_max = 46.
TEST(AmsKv, UniformAllocationGivesCmaxToLayersSpreadOverTheDepth) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25}, /*layers=*/6);
  // Every layer through every scale; returns what each layer keeps at the end (row 0, head 0).
  auto run_all = [&](CachePolicy& policy) {
    KvStore store = store_for(c);
    for (int64_t u = 0; u < 5; ++u) {
      const int64_t t = c.unit_tokens[static_cast<size_t>(u)];
      for (int64_t l = 0; l < c.n_layer; ++l) {
        const at::Tensor keys = random_keys(1, 2, t, 40 + 10 * u + l);
        store.append(l, keys, keys, range(c.unit_begin(u), c.unit_begin(u) + t));
        if (policy.wants_unit_keys()) policy.observe_unit_keys(l, u, keys);
        policy.before_unit_attention(store, l, u);
        policy.after_unit_layer(store, l, u);
      }
      policy.after_unit(store, u);
    }
    std::vector<std::vector<int64_t>> kept;
    for (int64_t l = 0; l < c.n_layer; ++l) kept.push_back(store.positions(l, 0, 0));
    return kept;
  };
  const std::vector<int64_t> demanding = concat(range(0, 5), range(14, 55));  // condensed + scales 3, 4
  const std::vector<int64_t> efficient = concat(range(0, 5), range(14, 30));  // condensed + scale 3
  // theta = 1 promotes a layer at its first overflow whatever its keys: under the
  // default (S2) every layer ends cache-demanding.
  auto s2 = make_policy("amskv:theta=1", c);
  EXPECT_TRUE(s2->wants_unit_keys());
  for (const auto& kept : run_all(*s2)) EXPECT_EQ(kept, demanding);
  // S1 with 2 of 6 layers: the centres of two bands of 3 layers, 1 and 4,
  // hold C_max from the start; theta no longer matters.
  auto s1 = make_policy("amskv:theta=1,allocation=uniform,demanding_layers=2", c);
  auto* ams = dynamic_cast<AmsKvPolicy*>(s1.get());
  ASSERT_NE(ams, nullptr);
  EXPECT_FALSE(s1->wants_unit_keys());
  EXPECT_EQ(ams->uniform_demanding_layers(), (std::vector<int64_t>{1, 4}));
  for (int64_t l = 0; l < 6; ++l) EXPECT_EQ(ams->cache_demanding(l, 0), l == 1 || l == 4) << l;
  const auto kept = run_all(*s1);
  for (int64_t l = 0; l < 6; ++l) EXPECT_EQ(kept[l], (l == 1 || l == 4) ? demanding : efficient) << l;
  // The default is the paper's sixth of the layers: one layer of 6 (the middle of the depth),
  // and on VAR-d30's 30 layers layers 3, 9, 15, 21, 27.
  auto one = make_policy("amskv:allocation=uniform", c);
  EXPECT_EQ(dynamic_cast<AmsKvPolicy&>(*one).uniform_demanding_layers(), (std::vector<int64_t>{3}));
  auto d30 = make_policy("amskv:allocation=uniform", scale_context({1, 4, 9, 16, 25}, /*layers=*/30));
  EXPECT_EQ(dynamic_cast<AmsKvPolicy&>(*d30).uniform_demanding_layers(), (std::vector<int64_t>{3, 9, 15, 21, 27}));
  // Every layer: C_max throughout.
  auto all = make_policy("amskv:allocation=uniform,demanding_layers=6", c);
  EXPECT_EQ(dynamic_cast<AmsKvPolicy&>(*all).uniform_demanding_layers(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  for (const auto& k : run_all(*all)) EXPECT_EQ(k, demanding);
  EXPECT_NE(test::policy_error("amskv:allocation=depth", c)
                .find("policy amskv: parameter allocation must be one of similarity, uniform, got 'depth'"),
            std::string::npos);
  EXPECT_NE(test::policy_error("amskv:allocation=uniform,demanding_layers=7", c)
                .find("policy amskv: demanding_layers 7 is impossible (0..6 for 6 layers; 0 = a sixth of them)"),
            std::string::npos);
}

// scale_groups (AMS-KV Table 1): scales 1, 4, 9, 16, 25 at positions 0, 1..4,
// 5..13, 14..29, 30..54; condensed = scales 0 and 1.
TEST(ScaleGroups, RemovesTheIntermediateOrTheCondensedScalesBeforeEachScaleAttends) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  auto run = [&](const std::string& spec) {
    auto policy = make_policy(spec, c);
    EXPECT_TRUE(policy->supports_units());
    KvStore store = store_for(c);
    std::vector<std::vector<int64_t>> seen;
    std::vector<int64_t> after;
    for (int64_t u = 0; u < 5; ++u) {
      seen.push_back(run_unit(*policy, store, c, u, random_keys(1, 2, c.unit_tokens[u], 50 + u), &after));
      EXPECT_EQ(after, seen.back()) << spec << ": nothing more leaves after attending";
      EXPECT_EQ(store.positions(0, 0, 1), after) << spec << ": every head alike";
    }
    return seen;
  };
  // One local scale: scale 4 no longer sees scale 2, the only intermediate one.
  auto one = run("scale_groups:remove=intermediate,local=1");
  EXPECT_EQ(one[3], range(0, 30));
  EXPECT_EQ(one[4], concat(concat(range(0, 5), range(14, 30)), range(30, 55)));
  // No local scale: scale 3 loses scale 2, scale 4 loses scales 2 and 3.
  auto none = run("scale_groups:local=0");
  EXPECT_EQ(none[2], range(0, 14));
  EXPECT_EQ(none[3], concat(range(0, 5), range(14, 30)));
  EXPECT_EQ(none[4], concat(range(0, 5), range(30, 55)));
  // The default two local scales leave no intermediate scale among five.
  auto two = run("scale_groups");
  EXPECT_EQ(two[4], range(0, 55));
  // Condensed: from scale 1 on, scales 0 and 1 are gone once they are past.
  auto condensed = run("scale_groups:remove=condensed");
  EXPECT_EQ(condensed[0], range(0, 1));
  EXPECT_EQ(condensed[1], range(1, 5));
  EXPECT_EQ(condensed[2], range(5, 14));
  EXPECT_EQ(condensed[4], range(5, 55));
  auto first = run("scale_groups:remove=condensed,cds=1");
  EXPECT_EQ(first[4], range(1, 55));
  // Budgets: the most kept after a removal, and the most held between an append and it.
  auto groups = make_policy("scale_groups:remove=intermediate,local=1", c);
  EXPECT_EQ(groups->budget_tokens(), 46);  // scales 0, 1, 3, 4
  EXPECT_EQ(groups->max_entries(), 55);    // scale 4 arrives beside all of 0..3
  auto cond = make_policy("scale_groups:remove=condensed", c);
  EXPECT_EQ(cond->budget_tokens(), 50);
  EXPECT_EQ(cond->max_entries(), 50);
  EXPECT_TRUE(dynamic_cast<ScaleGroupsPolicy&>(*cond).removed(0, 1));
  EXPECT_FALSE(dynamic_cast<ScaleGroupsPolicy&>(*cond).removed(1, 1));
  // CFG partners mirror the conditional row.
  const PolicyContext pairs = scale_context({1, 4, 9, 16, 25}, 1, 2, /*batch=*/1, /*cfg=*/true);
  auto mirrored = make_policy("scale_groups:local=0", pairs);
  KvStore store = store_for(pairs);
  for (int64_t u = 0; u < 5; ++u) run_unit(*mirrored, store, pairs, u, random_keys(2, 2, pairs.unit_tokens[u], 60 + u));
  EXPECT_EQ(store.positions(0, 1, 0), concat(range(0, 5), range(30, 55)));
  // Errors name what is wrong.
  EXPECT_NE(test::policy_error("scale_groups", test::small_policy_context(4)).find("next-scale (VAR) models only"),
            std::string::npos);
  EXPECT_NE(test::policy_error("scale_groups:remove=condensed,cds=0", c).find("needs cds >= 1"), std::string::npos);
  EXPECT_NE(test::policy_error("scale_groups:cds=5", c).find("cds 5 condensed scales is impossible (0..4"),
            std::string::npos);
  EXPECT_NE(test::policy_error("scale_groups:remove=local,local=0", c).find("remove=local needs local >= 1"),
            std::string::npos);
  EXPECT_NE(test::policy_error("scale_groups:remove=recent", c)
                .find("parameter remove must be one of intermediate, condensed, local, got 'recent'"),
            std::string::npos);
}

// Table 1's "Remove Local": while scale i attends, the local scales before it
// (not the condensed ones) are out of view; once it has attended they are back,
// so a later scale sees them as intermediate scales. Nothing is evicted.
TEST(ScaleGroups, RemoveLocalHidesTheRecentScalesOnlyWhileTheyAreLocal) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  auto sorted = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  auto run = [&](const PolicyContext& context, const std::string& spec) {
    auto policy = make_policy(spec, context);
    EXPECT_EQ(policy->budget_tokens(), 55) << "nothing is evicted";
    EXPECT_EQ(policy->max_entries(), 55);
    KvStore store = store_for(context);
    const int64_t rows = context.cfg ? 2 * context.batch : context.batch;
    std::vector<std::vector<int64_t>> seen;
    std::vector<int64_t> after;
    for (int64_t u = 0; u < 5; ++u) {
      seen.push_back(
          sorted(run_unit(*policy, store, context, u, random_keys(rows, 2, context.unit_tokens[u], 70 + u), &after)));
      EXPECT_EQ(sorted(after), range(0, context.unit_begin(u) + context.unit_tokens[u])) << spec << " after " << u;
      EXPECT_EQ(store.set_aside_count(0), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < 2; ++h) EXPECT_EQ(store.positions(0, r, h), after) << "every row and head alike";
    }
    EXPECT_EQ(store.evicted_first_row()[0], 0);
    return seen;
  };
  // Two local scales (the default): scale 3 does not see scale 2; scale 4 sees
  // neither 2 nor 3, but the condensed scales 0 and 1 stay in view throughout.
  auto two = run(c, "scale_groups:remove=local");
  EXPECT_EQ(two[0], range(0, 1));
  EXPECT_EQ(two[1], range(0, 5));
  EXPECT_EQ(two[2], range(0, 14));
  EXPECT_EQ(two[3], concat(range(0, 5), range(14, 30)));
  EXPECT_EQ(two[4], concat(range(0, 5), range(30, 55)));
  // One local scale: scale 4 sees scale 2 again (now intermediate), not scale 3.
  auto one = run(c, "scale_groups:remove=local,local=1");
  EXPECT_EQ(one[3], concat(range(0, 5), range(14, 30)));
  EXPECT_EQ(one[4], concat(range(0, 14), range(30, 55)));
  // One condensed scale: scale 1 is local to scale 2.
  auto cds1 = run(c, "scale_groups:remove=local,cds=1,local=1");
  EXPECT_EQ(cds1[2], concat(range(0, 1), range(5, 14)));
  EXPECT_TRUE(dynamic_cast<ScaleGroupsPolicy&>(*make_policy("scale_groups:remove=local", c)).removed(3, 4));
  EXPECT_FALSE(dynamic_cast<ScaleGroupsPolicy&>(*make_policy("scale_groups:remove=local", c)).removed(1, 4));
  // CFG pairs hide the same scales in both halves.
  const PolicyContext pairs = scale_context({1, 4, 9, 16, 25}, 1, 2, /*batch=*/1, /*cfg=*/true);
  EXPECT_EQ(run(pairs, "scale_groups:remove=local")[4], concat(range(0, 5), range(30, 55)));
}

TEST(StreamingScales, SinkScalesAndTheNewestTokensWithinTheBudget) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  auto policy = make_policy("streaming:budget=20,sink_scales=2", c);
  EXPECT_TRUE(policy->supports_units());
  KvStore store = store_for(c);
  std::vector<int64_t> after;
  for (int64_t u = 0; u < 5; ++u) {
    run_unit(*policy, store, c, u, random_keys(1, 2, c.unit_tokens[u], 30 + u), &after);
    EXPECT_LE(static_cast<int64_t>(after.size()), 20);
  }
  EXPECT_EQ(after, concat(range(0, 5), range(40, 55)));
  EXPECT_NE(test::policy_error("streaming:budget=5,sink_scales=2", c).find("must exceed the 5 sink tokens"),
            std::string::npos);
  EXPECT_NE(test::policy_error("streaming:sink_scales=5", c).find("sink_scales 5 is impossible"), std::string::npos);
}

// sink_scales=0 is the sliding window (SWA) of AMS-KV's Table 5: the newest B
// tokens, nothing kept for the first scales.
TEST(StreamingScales, WithoutSinkScalesOnlyTheNewestTokensStay) {
  const PolicyContext c = scale_context({1, 4, 9, 16, 25});
  auto policy = make_policy("streaming:budget=20,sink_scales=0", c);
  KvStore store = store_for(c);
  std::vector<int64_t> after;
  for (int64_t u = 0; u < 3; ++u) run_unit(*policy, store, c, u, random_keys(1, 2, c.unit_tokens[u], 30 + u), &after);
  EXPECT_EQ(after, range(0, 14));  // 14 tokens fit
  // Scale 3 attends to everything before it, then the newest 20 stay: scale 0 and 1 go.
  EXPECT_EQ(run_unit(*policy, store, c, 3, random_keys(1, 2, 16, 33), &after), range(0, 30));
  EXPECT_EQ(after, range(10, 30));
  EXPECT_EQ(run_unit(*policy, store, c, 4, random_keys(1, 2, 25, 34), &after), range(10, 55));
  EXPECT_EQ(after, range(35, 55));
}

TEST(H2OScales, KeepsTheNewestTokensAndTheHeaviestHittersAfterEveryLayer) {
  // B = 8: a recent window of 4, 4 heavy hitters by attention summed over every
  // scale's queries (per position, as the key_mass hands it).
  const PolicyContext c = scale_context({1, 4, 9});
  auto policy = make_policy("h2o:budget=8", c);
  EXPECT_TRUE(policy->supports_units());
  EXPECT_TRUE(policy->wants_key_mass());
  EXPECT_EQ(policy->max_entries(), 14);  // B + the last scale, capped at the 14 tokens
  KvStore store = store_for(c);
  auto mass_of = [](int64_t pos) { return pos == 1 || pos == 3 || pos == 6 ? 5.0f : 0.1f; };
  std::vector<int64_t> after;
  for (int64_t u = 0; u < 3; ++u) {
    const int64_t t = c.unit_tokens[static_cast<size_t>(u)];
    const at::Tensor keys = random_keys(1, 2, t, 50 + u);
    store.append(0, keys, keys, range(c.unit_begin(u), c.unit_begin(u) + t));
    const at::Tensor positions = store.positions_tensor(0).narrow(2, 0, store.max_length(0)).clone();
    at::Tensor mass = at::zeros(positions.sizes(), at::kFloat);
    for (int64_t j = 0; j < positions.size(2); ++j)
      if (positions[0][0][j].item<int64_t>() >= 0) mass.select(2, j).fill_(mass_of(positions[0][0][j].item<int64_t>()));
    policy->observe_unit_attention(0, u, mass, positions);
    policy->after_unit_layer(store, 0, u);
    after = store.positions(0, 0, 0);
    EXPECT_LE(static_cast<int64_t>(after.size()), 8);
  }
  // After scale 2 (positions 5..13): the 4 newest (10..13) and the heaviest older ones:
  // 1, 3 (5 per scale, twice), 6 (5, once), then position 0, which has collected 0.1
  // at all three scales (H2O's bias to the old).
  EXPECT_EQ(after, (std::vector<int64_t>{0, 1, 3, 6, 10, 11, 12, 13}));
}

TEST(SnapKvScales, TheCurrentScaleVotesAndStaysWhole) {
  // B = 12: scale 2 (9 tokens) stays, the 3 older entries its queries attend to most
  // survive. Every query of scale 2 looks for positions 0, 2 and 4 in head 0.
  const PolicyContext c = scale_context({1, 4, 9});
  auto policy = make_policy("snapkv:budget=12,kernel=1", c);
  EXPECT_TRUE(policy->supports_units());
  EXPECT_TRUE(policy->wants_queries());
  KvStore store = store_for(c);
  for (int64_t u = 0; u < 3; ++u) {
    const int64_t t = c.unit_tokens[static_cast<size_t>(u)], begin = c.unit_begin(u);
    at::Tensor keys = at::zeros({1, 2, t, 4});
    for (int64_t i = 0; i < t; ++i)
      if (begin + i == 0 || begin + i == 2 || begin + i == 4) keys[0][0][i][0] = 10.0f;
    store.append(0, keys, keys, range(begin, begin + t));
    at::Tensor q = at::zeros({1, 2, t, 4});
    q.select(3, 0).fill_(1.0f);
    policy->observe_queries(0, u, q);
    policy->after_unit_layer(store, 0, u);
    EXPECT_LE(static_cast<int64_t>(store.positions(0, 0, 0).size()), 12);
  }
  EXPECT_EQ(store.positions(0, 0, 0), concat({0, 2, 4}, range(5, 14)));
  // Head 1 has no preference: the oldest go first.
  EXPECT_EQ(store.positions(0, 0, 1), range(2, 14));
  // The observation window is the current scale: a raster window is refused.
  EXPECT_NE(test::policy_error("snapkv:window=4", c).find("window does not apply to next-scale models"),
            std::string::npos);
}

namespace {

// A profile where head h of layer l leans on source scale i with weight w(l, h, i).
ScaleAttentionProfile profile_from(const PolicyContext& c, const std::function<double(int64_t, int64_t, int64_t)>& w) {
  ScaleAttentionProfile p = ScaleAttentionProfile::uniform(c);
  const int64_t k = p.scales();
  for (int64_t l = 0; l < p.layers; ++l)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t k1 = 0; k1 < k; ++k1) {
        double sum = 0;
        for (int64_t k2 = 0; k2 <= k1; ++k2) sum += w(l, h, k2);
        for (int64_t k2 = 0; k2 <= k1; ++k2) p.beta_at(l, h, k1, k2) = w(l, h, k2) / sum;
      }
  return p;
}

}  // namespace

namespace {

// A context's calibrations holding one HeatKV profile (as the VAR session answers).
std::shared_ptr<FixedCalibrations> attention_calibration(ScaleAttentionProfile profile) {
  auto calibrations = std::make_shared<FixedCalibrations>();
  calibrations->attention = std::make_shared<const ScaleAttentionProfile>(std::move(profile));
  return calibrations;
}

}  // namespace

TEST(HeatKv, HeadsToPruneFollowEq5AndTheBudgetHoldsAfterEveryLayer) {
  PolicyContext c = scale_context({1, 4, 9, 16, 25, 36}, /*layers=*/3, /*heads=*/2);
  c.calibrations = attention_calibration(profile_from(c, [](int64_t l, int64_t h, int64_t i) {
    return 1.0 + static_cast<double>((l * 7 + h * 3 + i * 5) % 11);
  }));
  for (const std::string variant : {"scale", "binary"})
    for (const std::string pruning : {"greedy", "naive"}) {
      auto policy = make_policy("heatkv:budget=0.3,sinks=2,variant=" + variant + ",pruning=" + pruning, c);
      auto* heat = dynamic_cast<HeatKvPolicy*>(policy.get());
      ASSERT_NE(heat, nullptr);
      // T = 6 heads, c_{K-1} = 55 tokens, c_s = 5: B = floor(0.3 x 6 x 55) = 99.
      EXPECT_EQ(heat->total_budget_tokens(), 99);
      // N_k = ceil(6 (c_k - 16.5) / (c_k - 5)) for k >= 2: c_2 = 14 -> 0 (clamped), c_3 = 30 -> 4, c_4 = 55 -> 5.
      EXPECT_EQ(heat->heads_to_prune(1), 0);
      EXPECT_EQ(heat->heads_to_prune(2), 0);
      EXPECT_EQ(heat->heads_to_prune(3), 4);
      EXPECT_EQ(heat->heads_to_prune(4), 5);
      for (int64_t k = 0; k < 5; ++k)
        for (int64_t l = 0; l < 3; ++l)
          EXPECT_LE(heat->planned_size_after_layer(k, l), 99) << variant << " " << pruning << " scale " << k;
      // Sinks are never absent; the last scale is never cached.
      for (int64_t l = 0; l < 3; ++l)
        for (int64_t h = 0; h < 2; ++h) {
          EXPECT_FALSE(heat->absent_at_end(5, 0, l, h));
          EXPECT_FALSE(heat->absent_at_end(5, 1, l, h));
          EXPECT_TRUE(heat->absent_at_end(5, 5, l, h));
        }
    }
}

TEST(HeatKv, GreedyEarlyPruningIsMinimalAndPrunesLateLayersFirst) {
  PolicyContext c = scale_context({1, 4, 9, 16, 25, 36}, 3, 2);
  c.calibrations = attention_calibration(profile_from(c, [](int64_t l, int64_t h, int64_t i) {
    return 1.0 + static_cast<double>((l * 5 + h * 2 + i) % 7);
  }));
  auto greedy = make_policy("heatkv:budget=0.3,sinks=2,variant=binary", c);
  auto naive = make_policy("heatkv:budget=0.3,sinks=2,variant=binary,pruning=naive", c);
  auto* g = dynamic_cast<HeatKvPolicy*>(greedy.get());
  auto* n = dynamic_cast<HeatKvPolicy*>(naive.get());
  const int64_t B = g->total_budget_tokens(), cs = 5;
  int64_t scales_with_early = 0;
  for (int64_t k = 2; k < 5; ++k) {
    EXPECT_LE(g->early_pruned(k), n->early_pruned(k)) << k;
    EXPECT_EQ(n->early_pruned(k), g->heads_to_prune(k) - g->heads_to_prune(k - 1)) << k;
    // Binary heads: a pruned head holds c_s, any other c_k in a layer that ran scale k and
    // c_{k-1} in one that has not yet (the official schedule's count). `start` = heads absent
    // when scale k starts, `end` = after it; layers up to `layer` have run.
    const int64_t ck = c.unit_begin(k + 1), before = c.unit_begin(k);
    auto size_after = [&](const std::set<std::pair<int64_t, int64_t>>& start, int64_t layer) {
      int64_t m = 0;
      for (int64_t l = 0; l < 3; ++l)
        for (int64_t h = 0; h < 2; ++h) {
          const bool absent = l <= layer ? g->absent_at_end(k, 2, l, h) : start.count({l, h}) > 0;
          m += absent ? cs : l <= layer ? ck : before;
        }
      return m;
    };
    std::set<std::pair<int64_t, int64_t>> start, early;
    for (int64_t l = 0; l < 3; ++l)
      for (int64_t h = 0; h < 2; ++h)
        if (g->absent_at_start(k, 2, l, h)) {
          start.insert({l, h});
          if (!g->absent_at_end(k - 1, 2, l, h)) early.insert({l, h});
        }
    EXPECT_EQ(static_cast<int64_t>(early.size()), g->early_pruned(k)) << k;
    for (int64_t l = 0; l < 3; ++l) EXPECT_LE(size_after(start, l), B) << "scale " << k << " layer " << l;
    if (early.empty()) continue;
    ++scales_with_early;
    // Late layers first: every newly pruned head above the lowest early layer is early too.
    const int64_t lowest = early.begin()->first;
    for (int64_t l = lowest + 1; l < 3; ++l)
      for (int64_t h = 0; h < 2; ++h)
        if (g->absent_at_end(k, 2, l, h)) {
          EXPECT_TRUE(start.count({l, h})) << k << " " << l << " " << h;
        }
    // Minimal (Proposition 1): without any one of the lowest layer's early heads, some layer exceeds B.
    for (const auto& e : early) {
      if (e.first != lowest) continue;
      std::set<std::pair<int64_t, int64_t>> fewer = start;
      fewer.erase(e);
      int64_t worst = 0;
      for (int64_t l = 0; l < 3; ++l) worst = std::max(worst, size_after(fewer, l));
      EXPECT_GT(worst, B) << "scale " << k << ": early head (" << e.first << ", " << e.second << ") was not needed";
    }
  }
  EXPECT_GT(scales_with_early, 0);  // the geometry exercises early pruning
  // The whole budget (b = 1) prunes nothing but the last scale.
  auto full = make_policy("heatkv:budget=1", c);
  auto* f = dynamic_cast<HeatKvPolicy*>(full.get());
  for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(f->heads_to_prune(k), 0);
}

TEST(HeatKv, ClearErrors) {
  PolicyContext c = scale_context({1, 4, 9, 16, 25, 36}, 3, 2);
  EXPECT_NE(test::policy_error("heatkv:budget=0.5", c).find("needs this model's scale-attention calibration"),
            std::string::npos);
  c.calibrations = attention_calibration(ScaleAttentionProfile::uniform(c));
  EXPECT_NE(test::policy_error("heatkv:budget=0", c).find("budget 0.000000 is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("heatkv:budget=0.05", c).find("the 3 sink scales alone hold 14 of 55"),
            std::string::npos);
  EXPECT_NE(test::policy_error("heatkv:sinks=5", c).find("sinks 5 is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("heatkv:variant=ternary", c).find("must be one of scale, binary"), std::string::npos);
  PolicyContext other = scale_context({1, 4, 9, 16, 25, 36}, 4, 2);
  other.calibrations = c.calibrations;
  EXPECT_NE(test::policy_error("heatkv:budget=0.5", other).find("was made for another model"), std::string::npos);
  EXPECT_NE(test::policy_error("heatkv", test::small_policy_context(4)).find("next-scale (VAR) models only"),
            std::string::npos);
}

TEST(ScaleAttentionProfile, JsonRoundTripAndBadFilesNameTheProblem) {
  const PolicyContext c = scale_context({1, 4, 9}, 2, 2);
  ScaleAttentionProfile p = profile_from(c, [](int64_t l, int64_t h, int64_t i) { return 1.0 + l + 2 * h + i; });
  p.classes = {1, 3};
  p.samples = 2;
  const ScaleAttentionProfile q = ScaleAttentionProfile::from_json_text(p.to_json_text(), "x.json");
  EXPECT_EQ(q.beta, p.beta);
  EXPECT_EQ(q.classes, p.classes);
  EXPECT_EQ(q.unit_tokens, p.unit_tokens);
  // S-CAS by hand: source 0 of layer 1 head 1 is read by scales 1 and 2.
  EXPECT_DOUBLE_EQ(q.scas(1, 1, 0), (p.beta_at(1, 1, 1, 0) + p.beta_at(1, 1, 2, 0)) / 2);
  EXPECT_DOUBLE_EQ(q.cas(0, 1, 0), (p.beta_at(0, 1, 2, 0) + p.beta_at(0, 1, 2, 1)) / 3);

  auto error_of = [](const std::string& text) {
    try {
      ScaleAttentionProfile::from_json_text(text, "cal.json");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{").find("cal.json: not a scale-attention calibration: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"other\"}").find("format is not"), std::string::npos);
  std::string text = p.to_json_text();
  const auto at = text.find("\"beta\"");
  text.replace(text.find('[', at) + 1, 0, "7, ");
  EXPECT_NE(error_of(text).find("beta has 37 values, expected 36"), std::string::npos);
  ScaleAttentionProfile broken = p;
  broken.beta_at(0, 0, 2, 2) += 0.5;
  EXPECT_NE(error_of(broken.to_json_text()).find("sums to"), std::string::npos);
}

namespace {

using namespace kvs::var;

VarConfig small_var() { return test::tiny_var_config(3, {1, 2, 3, 4, 5, 6}); }

struct SmallVar : test::TinyVar {
  SmallVar() : test::TinyVar(small_var(), 7) {}
};

// Forwards every hook to a policy and checks a bound after every layer of every scale.
class BudgetWatch : public CachePolicy {
 public:
  BudgetWatch(CachePolicy& inner, std::function<void(const KvStore&, int64_t, int64_t)> check)
      : inner_(inner), check_(std::move(check)) {}
  std::string name() const override { return inner_.name(); }
  int64_t budget_tokens() const override { return inner_.budget_tokens(); }
  void after_token(KvStore& s, int64_t i) override { inner_.after_token(s, i); }
  bool supports_units() const override { return true; }
  bool wants_unit_keys() const override { return inner_.wants_unit_keys(); }
  bool wants_key_mass() const override { return inner_.wants_key_mass(); }
  bool wants_queries() const override { return inner_.wants_queries(); }
  void observe_queries(int64_t l, int64_t u, const at::Tensor& q) override { inner_.observe_queries(l, u, q); }
  void observe_unit_keys(int64_t l, int64_t u, const at::Tensor& k) override { inner_.observe_unit_keys(l, u, k); }
  void observe_unit_attention(int64_t l, int64_t u, const at::Tensor& m, const at::Tensor& p) override {
    inner_.observe_unit_attention(l, u, m, p);
  }
  void before_unit_attention(KvStore& s, int64_t l, int64_t u) override { inner_.before_unit_attention(s, l, u); }
  void after_unit_layer(KvStore& s, int64_t l, int64_t u) override {
    inner_.after_unit_layer(s, l, u);
    check_(s, l, u);
    ++checks;
  }
  void after_unit(KvStore& s, int64_t u) override { inner_.after_unit(s, u); }
  int64_t checks = 0;

 private:
  CachePolicy& inner_;
  std::function<void(const KvStore&, int64_t, int64_t)> check_;
};

}  // namespace

TEST(ScalePolicies, EveryScalePolicyKeepsItsBudgetAfterEveryLayerOfEveryScale) {
  SmallVar var;
  const VarConfig& config = var.model.transformer->config();
  const at::Tensor labels = at::tensor({1, 3}, at::kLong);
  ScaleParams params;
  params.seed = 4;
  PolicyContext context = scale_policy_context(config, 2, true, params.seed);
  auto calibrations = std::make_shared<FixedCalibrations>();
  calibrations->attention = std::make_shared<const ScaleAttentionProfile>(
      calibrate_scale_attention(var.model, {0, 2}, params));
  calibrations->variance = std::make_shared<const HeadVarianceProfile>(
      calibrate_head_variance(var.model, {0, 2}, params));
  context.calibrations = calibrations;
  const ScaleResult full = generate_scales(*var.model.transformer, *var.model.vqvae, labels, params);

  for (const std::string spec :
       {"streaming:budget=30", "streaming:budget=30,sink_scales=0", "amskv", "amskv:theta=1",
        "amskv:allocation=uniform,demanding_layers=1", "heatkv:budget=0.3,sinks=2",
        "heatkv:budget=0.2,sinks=2,variant=binary", "heatkv:budget=0.5,pruning=naive", "h2o:budget=30",
        "snapkv:budget=30", "snapkv:budget=30,cfg_decision=both", "scalekv:budget=30", "hack:budget=30",
        "hack:budget=30,sinks=2,contextual=1/3,ratio=1/4", "scale_groups", "scale_groups:remove=condensed,cds=1"}) {
    auto policy = make_policy(spec, context);
    int64_t limit_total = -1, limit_segment = -1;
    if (auto* heat = dynamic_cast<HeatKvPolicy*>(policy.get())) limit_total = heat->total_budget_tokens();
    else limit_segment = policy->budget_tokens();
    int64_t worst = 0;
    BudgetWatch watch(*policy, [&](const KvStore& store, int64_t, int64_t) {
      for (int64_t row = 0; row < store.rows(); ++row) {
        int64_t total = 0;
        for (int64_t l = 0; l < store.n_layer(); ++l)
          for (int64_t h = 0; h < store.kv_heads(); ++h) {
            const int64_t n = store.length(l, row, h);
            total += n;
            if (limit_segment >= 0) {
              EXPECT_LE(n, limit_segment) << spec;
              worst = std::max(worst, n);
            }
          }
        if (limit_total >= 0) {
          EXPECT_LE(total, limit_total) << spec;
          worst = std::max(worst, total);
        }
      }
    });
    ScaleHooks hooks;
    hooks.policy = [&]() -> CachePolicy* { return &watch; };
    const ScaleResult r = generate_scales(*var.model.transformer, *var.model.vqvae, labels, params, hooks);
    EXPECT_EQ(watch.checks, config.depth * config.scales()) << spec;
    EXPECT_GT(worst, 0) << spec;
    EXPECT_LT(r.memory.bytes_logical, full.memory.bytes_logical) << spec;
    // The last scale reserves no headroom: the buffers end holding what is kept.
    EXPECT_EQ(r.memory.bytes_allocated, r.memory.bytes_logical) << spec;
    EXPECT_TRUE(at::isfinite(r.f_hat).all().item<bool>()) << spec;
  }
}

TEST(HeatKvCalibration, BetaRowsAreAttentionDistributionsAndTheSessionCalibratesOnce) {
  SmallVar var;
  ScaleParams params;
  const ScaleAttentionProfile p = calibrate_scale_attention(var.model, {1, 4}, params);
  EXPECT_EQ(p.samples, 2);
  EXPECT_EQ(p.layers, 3);
  EXPECT_EQ(p.heads, 2);
  for (int64_t l = 0; l < 3; ++l)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t k1 = 0; k1 < 6; ++k1) {
        double row = 0;
        for (int64_t k2 = 0; k2 < 6; ++k2) {
          if (k2 > k1) {
            EXPECT_EQ(p.beta_at(l, h, k1, k2), 0.0);
          }
          row += p.beta_at(l, h, k1, k2);
        }
        EXPECT_NEAR(row, 1.0, 1e-6);
      }
  EXPECT_DOUBLE_EQ(p.beta_at(0, 0, 0, 0), 1.0);  // the first scale (one token) sees only itself
  // Stable: the same classes and seed give the same profile.
  EXPECT_EQ(calibrate_scale_attention(var.model, {1, 4}, params).beta, p.beta);

  // The session: no calibration file -> calibrated at first use; a stored one is used;
  // a corrupt one is a clear error.
  GenerationRequest r;
  r.model_path = var.dir.path().string();
  r.class_ids = {2};
  r.device = "cpu";
  r.threads = 1;
  r.policy = parse_policy_spec("heatkv:budget=0.3,sinks=2");
  GenerationSession session;
  const GenerationResult a = session.run(r);
  EXPECT_LT(a.kv_bytes_logical_final, a.kv_bytes_full);
  const std::string file = r.model_path + "/" + kScaleAttentionProfileFile;
  EXPECT_FALSE(std::filesystem::exists(file));  // the session does not write into the bundle
  p.save(file);
  GenerationSession fresh;
  EXPECT_NO_THROW(fresh.run(r));
  test::write_bytes(file, "{\"format\": \"kvstudio-scale-attention-profile\", \"version\": 1}");
  GenerationSession broken;
  try {
    broken.run(r);
    FAIL() << "a corrupt calibration must be refused";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("heatkv_calibration.json: not a scale-attention calibration"),
              std::string::npos);
  }
}

namespace {

// Counts the log lines that contain `needle` while alive.
class LogCounter {
 public:
  explicit LogCounter(std::string needle) : needle_(std::move(needle)) {
    id_ = add_log_listener([this](LogLevel, const std::string&, const std::string& message) {
      if (message.find(needle_) != std::string::npos) ++count_;
    });
  }
  ~LogCounter() { remove_log_listener(id_); }
  int count() const { return count_; }

 private:
  std::string needle_;
  std::atomic<int> count_{0};
  int id_ = 0;
};

}  // namespace

TEST(HeatKvCalibration, CalibrationImagesMeasuresOnThatManyClassesOncePerN) {
  SmallVar var;
  GenerationRequest r;
  r.class_ids = {2};
  r.cfg_scale = 4.0;  // not calibrate's 1.5: the calibration is measured at the run's CFG
  RunContext ctx;
  ctx.bundle_dir = var.dir.path().string();
  VarCalibrations kept;
  const LogCounter measured("HeatKV calibration_images=");
  const std::string spec = "heatkv:budget=0.3,sinks=2,calibration_images=";

  // N = 3 of the 5 classes, spread as `calibrate --images 3` spreads them.
  const auto three = heatkv_calibration_for(var.model, kept, spec + "3", r, ctx);
  EXPECT_EQ(three->classes, spread_classes(5, 3));
  EXPECT_EQ(three->classes, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(three->samples, 3);
  EXPECT_EQ(three->seed, 0u);
  EXPECT_DOUBLE_EQ(three->cfg, 4.0);  // the run's CFG, not calibrate's default
  EXPECT_EQ(measured.count(), 1);
  // The same N again (another budget too): kept, not measured again.
  EXPECT_EQ(heatkv_calibration_for(var.model, kept, "heatkv:budget=0.5,calibration_images=3", r, ctx), three);
  EXPECT_EQ(measured.count(), 1);
  // Another N: its own classes and ranking, kept beside the first.
  const auto one = heatkv_calibration_for(var.model, kept, spec + "1", r, ctx);
  EXPECT_EQ(one->classes, (std::vector<int64_t>{0}));
  EXPECT_NE(one->beta, three->beta);
  EXPECT_EQ(measured.count(), 2);
  EXPECT_EQ(heatkv_calibration_for(var.model, kept, spec + "3", r, ctx), three);
  EXPECT_EQ(heatkv_calibration_for(var.model, kept, spec + "1", r, ctx), one);
  EXPECT_EQ(measured.count(), 2);
  // The default (no calibration_images, no bundle file): the 2-class first-use one, its own slot.
  const auto fallback = heatkv_calibration_for(var.model, kept, "heatkv:budget=0.3,sinks=2", r, ctx);
  EXPECT_EQ(fallback->classes, spread_classes(5, 2));
  EXPECT_EQ(kept.attention.size(), 3u);

  // Impossible values name the parameter and measure nothing.
  VarCalibrations none;
  try {
    heatkv_calibration_for(var.model, none, spec + "6", r, ctx);
    FAIL() << "6 calibration images of a 5-class model must be refused";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("calibration_images 6 is impossible"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("5 classes"), std::string::npos) << e.what();
  }
  try {
    heatkv_calibration_for(var.model, none, spec + "-1", r, ctx);
    FAIL() << "a negative calibration_images must be refused";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("calibration_images -1 is impossible"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(none.attention.empty());
  EXPECT_EQ(measured.count(), 2);

  // A bundle file serves only the settings it was measured with: its classes,
  // CFG and seed (the file is marked by its sample count).
  ScaleAttentionProfile stored = *three;  // classes {0, 1, 3}, CFG 4, seed 0
  stored.samples = 7;
  const std::string file = ctx.bundle_dir + "/" + kScaleAttentionProfileFile;
  stored.save(file);
  VarCalibrations fresh;
  const auto from_file = heatkv_calibration_for(var.model, fresh, spec + "3", r, ctx);
  EXPECT_EQ(from_file->samples, 7);
  EXPECT_EQ(measured.count(), 2);
  // The same classes at another CFG, named by calibration_cfg or by the run: measured once.
  const auto at_one_five = heatkv_calibration_for(var.model, fresh, spec + "3,calibration_cfg=1.5", r, ctx);
  EXPECT_EQ(at_one_five->samples, 3);
  EXPECT_DOUBLE_EQ(at_one_five->cfg, 1.5);
  EXPECT_NE(at_one_five->beta, from_file->beta);
  EXPECT_EQ(measured.count(), 3);
  GenerationRequest run_at_one_five = r;
  run_at_one_five.cfg_scale = 1.5;
  EXPECT_EQ(heatkv_calibration_for(var.model, fresh, spec + "3", run_at_one_five, ctx), at_one_five);
  EXPECT_EQ(measured.count(), 3);
  // Other classes: measured.
  const auto measured_two = heatkv_calibration_for(var.model, fresh, spec + "2", r, ctx);
  EXPECT_EQ(measured_two->classes, (std::vector<int64_t>{0, 2}));
  EXPECT_DOUBLE_EQ(measured_two->cfg, 4.0);
  EXPECT_EQ(measured.count(), 4);
  // Another seed: measured.
  stored.seed = 5;
  stored.save(file);
  VarCalibrations other_seed;
  EXPECT_EQ(heatkv_calibration_for(var.model, other_seed, spec + "3", r, ctx)->samples, 3);
  EXPECT_EQ(measured.count(), 5);
  // The default set is the file's classes, at the run's CFG too.
  stored.seed = 0;
  stored.save(file);
  VarCalibrations defaults;
  EXPECT_EQ(heatkv_calibration_for(var.model, defaults, "heatkv", r, ctx)->samples, 7);
  const auto default_at_one_five = heatkv_calibration_for(var.model, defaults, "heatkv", run_at_one_five, ctx);
  EXPECT_EQ(default_at_one_five->samples, 3);
  EXPECT_EQ(default_at_one_five->classes, stored.classes);
  EXPECT_DOUBLE_EQ(default_at_one_five->cfg, 1.5);
}

TEST(HeatKvCalibration, ASessionKeepsEachNAndAPolicyChangeGetsItsOwn) {
  SmallVar var;
  GenerationRequest r;
  r.model_path = var.dir.path().string();
  r.class_ids = {2};
  r.device = "cpu";
  r.threads = 1;
  r.policy = parse_policy_spec("heatkv:budget=0.3,sinks=2,calibration_images=1");
  const LogCounter measured("HeatKV calibration_images=");
  const LogCounter measured_three("HeatKV calibration_images=3");
  GenerationSession session;
  const GenerationResult a = session.run(r);
  EXPECT_LT(a.kv_bytes_logical_final, a.kv_bytes_full);
  EXPECT_EQ(measured.count(), 1);
  const GenerationResult again = session.run(r);
  EXPECT_EQ(measured.count(), 1);  // kept with the loaded model
  EXPECT_EQ(again.images.front().pixels, a.images.front().pixels);

  // A change to another N mid-run builds the new policy on that N's calibration.
  struct Switcher : EventSink {
    GenerationSession* session = nullptr;
    std::vector<PolicyChangedEvent> changes;
    void on_event(const GenerationEvent& e) override {
      if (auto* u = std::get_if<UnitDoneEvent>(&e); u && u->unit_index == 1)
        session->request_policy_change("heatkv:budget=0.3,sinks=2,calibration_images=3");
      if (auto* c = std::get_if<PolicyChangedEvent>(&e)) changes.push_back(*c);
    }
  } sink;
  sink.session = &session;
  session.run(r, &sink);
  ASSERT_EQ(sink.changes.size(), 1u);
  EXPECT_TRUE(sink.changes[0].accepted) << sink.changes[0].message;
  EXPECT_EQ(measured_three.count(), 1);
  EXPECT_EQ(measured.count(), 2);

  // Too many classes: refused before the run starts, naming the parameter.
  r.policy = parse_policy_spec("heatkv:budget=0.3,sinks=2,calibration_images=6");
  try {
    session.run(r);
    FAIL() << "6 calibration images of a 5-class model must be refused";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("calibration_images 6 is impossible"), std::string::npos) << e.what();
  }
  EXPECT_EQ(measured.count(), 2);
}
