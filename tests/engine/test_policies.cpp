// Cache policies: exactly which positions survive on hand-built caches, the
// budget is never exceeded at any step of a real generation (every policy), CFG
// pairs keep the same positions, impossible budgets are clear errors, and a
// policy change mid-run adopts the cache as it stands.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "engine/cache/policies/linear_policy.h"
#include "engine/cache/policies/policy_budget.h"
#include "engine/cache/policies/policy_catalog.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/core/number_parsing.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

// Appends one entry at `position` whose key is `key_scale` * e0 to every segment.
void append_token(KvStore& store, int64_t position, float key_scale) {
  at::Tensor k = at::zeros({store.rows(), store.kv_heads(), 1, store.head_dim()});
  k.select(3, 0).fill_(key_scale);
  store.append(0, k, at::ones_like(k) * static_cast<float>(position), {position});
}

}  // namespace

TEST(StreamingPolicy, KeepsConditionSinksAndRecentWindow) {
  PolicyContext c = test::small_policy_context(4);
  auto policy = make_policy("streaming:budget=6,sink=2", c);
  KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
  append_token(store, 0, 1.0f);  // condition token
  for (int64_t i = 0; i < 10; ++i) {
    append_token(store, 1 + i, 1.0f);
    policy->after_token(store, i);
    EXPECT_LE(image_entry_counts(store, 0, 1).max().item<int64_t>(), 6);
  }
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 2, 7, 8, 9, 10}));
  // Values moved with their keys.
  EXPECT_EQ(store.values(0, store.max_length(0))[0][0][3][0].item<float>(), 7.0f);
}

TEST(LinearPolicy, EvictsTheLeastSalientMidTokensAtLineEnds) {
  // 4x4 grid (n = 4), B = 12 (3 lines), N_init = 1, r = 1.
  PolicyContext c = test::small_policy_context(4);
  auto policy = make_policy("linear:budget=12,n_init=1,r=1", c);
  KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
  append_token(store, 0, 0.0f);
  // Key strengths of image tokens 0..11: the guiding queries (all e0) favour large ones.
  const float strength[12] = {0.1f, 5.0f, -3.0f, 4.0f, -1.0f, 2.0f, -2.0f, 3.0f, 0, 0, 0, 0};
  at::Tensor q = at::zeros({1, 1, 1, 4});
  q.select(3, 0).fill_(1.0f);
  for (int64_t i = 0; i < 12; ++i) {
    append_token(store, 1 + i, strength[i]);
    policy->observe_queries(0, i, q);
    policy->after_token(store, i);
  }
  // Anchor: token 0 (pos 1). Recent line: tokens 8..11 (pos 9..12). Mid: tokens 1..7;
  // the n = 4 weakest (2, 6, 4, 5 -> strengths -3, -2, -1, 2) are evicted.
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 2, 4, 8, 9, 10, 11, 12}));
  // Next line: no eviction until the line ends, then back to B - n = 8 image entries.
  for (int64_t i = 12; i < 16; ++i) {
    append_token(store, 1 + i, 0.5f);
    policy->observe_queries(0, i, q);
    policy->after_token(store, i);
    EXPECT_LE(image_entry_counts(store, 0, 1).max().item<int64_t>(), 12);
  }
  EXPECT_EQ(image_entry_counts(store, 0, 1).item<int64_t>(), 8);
  const auto kept = store.positions(0, 0, 0);
  EXPECT_EQ(kept.front(), 0);
  EXPECT_EQ(kept[1], 1);  // the anchor survives
  EXPECT_EQ(std::vector<int64_t>(kept.end() - 4, kept.end()), (std::vector<int64_t>{13, 14, 15, 16}));
}

// LineAR Table 5's components: without the anchors (n_init=0) or without the
// recent lines (r=0), the same cache and queries as above.
TEST(LinearPolicy, WithoutAnchorsOrRecentLinesThoseTokensCompeteAsMidTokens) {
  const float strength[12] = {0.1f, 5.0f, -3.0f, 4.0f, -1.0f, 2.0f, -2.0f, 3.0f, 0, 0, 0, 0};
  auto run = [&](const std::string& spec) {
    PolicyContext c = test::small_policy_context(4);
    auto policy = make_policy(spec, c);
    KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
    append_token(store, 0, 0.0f);
    at::Tensor q = at::zeros({1, 1, 1, 4});
    q.select(3, 0).fill_(1.0f);
    for (int64_t i = 0; i < 12; ++i) {
      append_token(store, 1 + i, strength[i]);
      policy->observe_queries(0, i, q);
      policy->after_token(store, i);
    }
    return store.positions(0, 0, 0);
  };
  // Both: anchor token 0 (position 1) and the recent line (positions 9..12) kept,
  // mid tokens 1, 3, 7 survive (the test above).
  EXPECT_EQ(run("linear:budget=12,n_init=1,r=1"), (std::vector<int64_t>{0, 1, 2, 4, 8, 9, 10, 11, 12}));
  // n_init=0: token 0 (strength 0.1) is a mid token and one of the four weakest, so
  // it goes and token 5 (strength 2) stays.
  EXPECT_EQ(run("linear:budget=12,n_init=0,r=1"), (std::vector<int64_t>{0, 2, 4, 6, 8, 9, 10, 11, 12}));
  // r=0: the finished line (tokens 8..11, strength 0) is mid too; the weakest four are
  // tokens 2, 6, 4 and, among the equal zeros, the oldest, token 8 (position 9).
  EXPECT_EQ(run("linear:budget=12,n_init=1,r=0"), (std::vector<int64_t>{0, 1, 2, 4, 6, 8, 10, 11, 12}));
  // Neither: every image token competes; token 0 (0.1) outranks the finished line's
  // zeros, so the result is r=0's.
  EXPECT_EQ(run("linear:budget=12,n_init=0,r=0"), (std::vector<int64_t>{0, 1, 2, 4, 6, 8, 10, 11, 12}));
}

// guidance=attn_acc (LineAR Table 6's AttAcc): the same cache, queries and attention
// as the default sees, but the mid tokens are ranked by the attention accumulated
// over every step since they entered the cache, looked up by position (slots move).
TEST(LinearPolicy, AttnAccGuidanceRanksMidTokensByAccumulatedAttention) {
  // 4x4 grid (n = 4), B = 12, N_init = 1, r = 1, as above; keys as above, so the
  // finished line's queries (inter-line guidance) favour tokens 1, 3 and 7.
  const float strength[16] = {0.1f, 5.0f, -3.0f, 4.0f, -1.0f, 2.0f, -2.0f, 3.0f, 0, 0, 0, 0, 0, 0, 0, 0};
  // The attention each position receives at every step it is cached (condition:
  // position 0). Accumulated over the steps a token is present, tokens 2, 5 and 6
  // (positions 3, 6, 7) lead among the mid tokens at the first line end: 0.5 x 10,
  // 0.6 x 7, 0.9 x 6 steps against 0.01 x 11, 0.02 x 9, 0.03 x 8, 0.04 x 5.
  const double mass[17] = {1.0, 0.05, 0.01, 0.5, 0.02, 0.03, 0.6,  0.9, 0.04,
                           0.1, 0.3,  0.07, 0.2, 0.05, 0.05, 0.05, 0.05};
  auto run = [&](const std::string& spec, int64_t tokens) {
    PolicyContext c = test::small_policy_context(4);
    auto policy = make_policy(spec, c);
    KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
    append_token(store, 0, 0.0f);
    at::Tensor q = at::zeros({1, 1, 1, 4});
    q.select(3, 0).fill_(1.0f);
    for (int64_t i = 0; i < tokens; ++i) {
      append_token(store, 1 + i, strength[i]);
      // What the model hands a policy at this step, for what it asks.
      if (policy->wants_queries()) policy->observe_queries(0, i, q);
      if (policy->wants_key_mass()) {
        const int64_t length = store.max_length(0);
        const at::Tensor positions = store.positions_tensor(0).narrow(2, 0, length);
        at::Tensor key_mass = at::zeros({1, 1, length});
        for (int64_t slot = 0; slot < length; ++slot)
          key_mass[0][0][slot] = mass[positions[0][0][slot].item<int64_t>()];
        policy->observe_attention(0, i, key_mass, positions);
      }
      policy->after_token(store, i);
    }
    return store.positions(0, 0, 0);
  };
  const std::string base = "linear:budget=12,n_init=1,r=1";
  {
    auto inter_line = make_policy(base, test::small_policy_context(4));
    auto attn_acc = make_policy(base + ",guidance=attn_acc", test::small_policy_context(4));
    EXPECT_TRUE(inter_line->wants_queries());
    EXPECT_FALSE(inter_line->wants_key_mass());
    EXPECT_FALSE(attn_acc->wants_queries());
    EXPECT_TRUE(attn_acc->wants_key_mass());
  }
  // First line end: the default keeps mid tokens 1, 3, 7 (positions 2, 4, 8); AttAcc
  // keeps 2, 5, 6 (positions 3, 6, 7). Anchor (position 1) and the recent line
  // (positions 9..12) are kept by both.
  EXPECT_EQ(run(base, 12), (std::vector<int64_t>{0, 1, 2, 4, 8, 9, 10, 11, 12}));
  EXPECT_EQ(run(base + ",guidance=inter_line", 12), (std::vector<int64_t>{0, 1, 2, 4, 8, 9, 10, 11, 12}));
  EXPECT_EQ(run(base + ",guidance=attn_acc", 12), (std::vector<int64_t>{0, 1, 3, 6, 7, 9, 10, 11, 12}));
  // Next line end: the mid region is positions 3, 6, 7, 9..12 and four go. The sums
  // kept growing by position across the first eviction: 0.5 x 14, 0.6 x 11, 0.9 x 10
  // against 0.1 x 8, 0.3 x 7, 0.07 x 6, 0.2 x 5 for positions 9..12, which all go.
  EXPECT_EQ(run(base + ",guidance=attn_acc", 16), (std::vector<int64_t>{0, 1, 3, 6, 7, 13, 14, 15, 16}));
  // Unknown values name the parameter and its choices.
  EXPECT_NE(test::policy_error(base + ",guidance=heavy", test::small_policy_context(4))
                .find("policy linear: parameter guidance must be one of inter_line, attn_acc, got 'heavy'"),
            std::string::npos);
}

TEST(LinearPolicy, CfgPairsKeepTheSamePositions) {
  PolicyContext c = test::small_policy_context(4, /*rows=*/2, /*cfg=*/true);
  auto policy = make_policy("linear:budget=12,n_init=1", c);
  KvStore store(1, 2, 1, 4, 16, at::TensorOptions().dtype(at::kFloat));
  store.append(0, at::zeros({2, 1, 1, 4}), at::zeros({2, 1, 1, 4}), {0});
  for (int64_t i = 0; i < 12; ++i) {
    at::Tensor k = at::randn({2, 1, 1, 4});  // different keys in the two rows
    store.append(0, k, k, {1 + i});
    policy->observe_queries(0, i, at::randn({2, 1, 1, 4}));
    policy->after_token(store, i);
  }
  EXPECT_EQ(store.positions(0, 0, 0), store.positions(0, 1, 0));
  EXPECT_EQ(image_entry_counts(store, 0, 1)[0][0].item<int64_t>(), 8);
}

// CFG ends in the middle of a line: the conditional row keeps the queries it
// buffered before, so the line end is still guided by the whole finished line.
// The cache and keys of the first LineAR test; the line's first two queries look
// for strong keys, the two after the drop are zero (uniform attention). Guided by
// all four, the four weakest mid tokens go, as in that test; had the buffer lost
// the first two, every mid token would tie and the oldest four would go.
TEST(LinearPolicy, CfgEndingMidLineKeepsTheLinesEarlierQueries) {
  PolicyContext c = test::small_policy_context(4, /*rows=*/2, /*cfg=*/true);
  auto policy = make_policy("linear:budget=12,n_init=1,r=1", c);
  KvStore store(1, 2, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
  append_token(store, 0, 0.0f);
  const float strength[12] = {0.1f, 5.0f, -3.0f, 4.0f, -1.0f, 2.0f, -2.0f, 3.0f, 0, 0, 0, 0};
  for (int64_t i = 0; i < 12; ++i) {
    if (i == 10) store.keep_rows(0, 1);  // CFG ends after token 9, half-way through the last line
    append_token(store, 1 + i, strength[i]);
    at::Tensor q = at::zeros({store.rows(), 1, 1, 4});
    if (i < 10) q.select(3, 0).fill_(1.0f);
    policy->observe_queries(0, i, q);
    policy->after_token(store, i);
  }
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 2, 4, 8, 9, 10, 11, 12}));
}

TEST(RandomPolicy, ReproducibleAndNeverEvictsTheCondition) {
  PolicyContext c = test::small_policy_context(4);
  c.seed = 9;
  std::vector<int64_t> first;
  for (int run = 0; run < 2; ++run) {
    auto policy = make_policy("random:budget=8", c);
    KvStore store(1, 1, 1, 4, 16, at::TensorOptions().dtype(at::kFloat));
    append_token(store, 0, 1.0f);
    for (int64_t i = 0; i < 16; ++i) {
      append_token(store, 1 + i, 1.0f);
      policy->after_token(store, i);
      EXPECT_LE(image_entry_counts(store, 0, 1).item<int64_t>(), 8);
    }
    auto kept = store.positions(0, 0, 0);
    EXPECT_EQ(kept.front(), 0);
    if (run == 0) {
      first = kept;
    } else {
      EXPECT_EQ(kept, first);
    }
  }
}

TEST(PolicyRegistry, ClearErrorsForBadSpecsAndImpossibleBudgets) {
  PolicyContext c = test::small_policy_context(16);
  EXPECT_NE(
      test::policy_error("bogus", c).find("unknown cache policy 'bogus' (available: full, streaming, random, linear"),
      std::string::npos);
  EXPECT_NE(test::policy_error("linear:rho=0", c).find("rho 0 is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("linear:rho=1.5", c).find("rho 1.5 is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("linear:rho=-1/6", c).find("impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("linear:rho=abc", c).find("parameter rho expects a number, got 'abc'"),
            std::string::npos);
  EXPECT_NE(
      test::policy_error("linear:rho=1/8", c).find("must hold 4 anchors, 1 recent line(s) and the one-line buffer"),
      std::string::npos);
  EXPECT_NE(test::policy_error("linear:colour=red", c).find("unknown parameter 'colour'"), std::string::npos);
  EXPECT_NE(test::policy_error("linear:cfg_decision=maybe", c).find("must be one of cond, both"), std::string::npos);
  EXPECT_NE(test::policy_error("streaming:budget=4,sink=4", c).find("must exceed the 4 sink tokens"),
            std::string::npos);
  EXPECT_NE(test::policy_error("streaming:budget=999", c).find("budget 999 tokens is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("linear:rho", c).find("expected key=value"), std::string::npos);
  EXPECT_EQ(make_policy("linear:rho=1/6", test::small_policy_context(24))->budget_tokens(), 96);  // 576/6, whole lines
  EXPECT_EQ(make_policy("linear:rho=1/5", test::small_policy_context(16))->budget_tokens(), 48);  // 51 -> 3 lines
}

// The window reads the registry's own descriptions (not a copy that could drift),
// and every default it shows lies inside the range its spin box allows.
TEST(PolicyCatalog, IsTheRegistrysDescriptionsWithDefaultsInsideTheirRanges) {
  ASSERT_EQ(policy_catalog().size(), policy_registry().size());
  size_t i = 0;
  for (const PolicyDescription& entry : policy_catalog()) {
    EXPECT_EQ(&entry, static_cast<const PolicyDescription*>(&policy_registry()[i++])) << entry.name;
    EXPECT_EQ(find_policy_entry(entry.name), &entry);
    for (const PolicyParamSpec& p : entry.params) {
      const std::string what = entry.name + "." + p.name;
      EXPECT_FALSE(p.help.empty()) << what;
      if (p.kind == PolicyParamKind::Choice) {
        EXPECT_NE(std::find(p.choices.begin(), p.choices.end(), p.default_value), p.choices.end()) << what;
        continue;
      }
      const auto value = parse_number_text(p.default_value);
      ASSERT_TRUE(value.has_value()) << what;
      EXPECT_LE(p.minimum, *value) << what;
      EXPECT_GE(p.maximum, *value) << what;
    }
  }
  EXPECT_EQ(find_policy_entry("bogus"), nullptr);
}

// How a spec's budget reads, as the window's budget slider shows it: budget > 0
// (tokens) overrides rho; HeatKV's budget is a share of the whole cache; full
// and unknown or malformed specs have none.
TEST(PolicyCatalog, ReadsABudgetWithTheRegistrysPrecedence) {
  using Unit = PolicyBudget::Unit;
  EXPECT_EQ(policy_budget_kind(find_policy_entry("linear")), PolicyBudgetKind::RhoOrTokens);
  EXPECT_EQ(policy_budget_kind(find_policy_entry("heatkv")), PolicyBudgetKind::CacheShare);
  EXPECT_EQ(policy_budget_kind(find_policy_entry("full")), PolicyBudgetKind::None);
  EXPECT_EQ(policy_budget_kind(nullptr), PolicyBudgetKind::None);
  const struct {
    std::string spec;
    Unit unit;
    double value;
  } cases[] = {{"linear:rho=0.25", Unit::Share, 0.25},
               {"linear:rho=0.25,budget=40", Unit::Tokens, 40},
               {"linear:budget=0,rho=1/8", Unit::Share, 0.125},
               {"linear", Unit::Share, 1.0 / 6},
               {"heatkv:budget=0.2", Unit::Share, 0.2},
               {"heatkv", Unit::Share, 0.1},
               {"full", Unit::None, 0},
               {"bogus:rho=0.5", Unit::None, 0},
               {"linear:rho", Unit::None, 0}};
  for (const auto& c : cases) {
    const PolicyBudget b = read_policy_budget(c.spec);
    EXPECT_EQ(b.unit, c.unit) << c.spec;
    EXPECT_NEAR(b.value, c.value, 1e-12) << c.spec;
  }
}

// Every policy, on the bundled demo model (16x16 tokens) with CFG: after every
// token no segment of any layer holds more than B image entries, and both halves
// of each CFG pair hold the same positions.
TEST(PolicyBudgets, NeverExceededAtAnyStepOfARealGeneration) {
  auto bundle = io::ModelBundle::open(std::string(KVSTUDIO_SOURCE_DIR) + "/resources/models/llamagen-demo");
  auto model = llamagen::LlamaGenModel::load(bundle, at::Device(at::kCPU));
  const auto& cfg = model.gpt->config();
  const PolicyContext context = llamagen::raster_policy_context(cfg, /*batch=*/2, /*cfg=*/true, /*seed=*/5);
  for (const std::string spec :
       {"full", "streaming:rho=1/4", "random:rho=1/4", "linear:rho=1/4", "linear:rho=1/2,cfg_decision=both",
        "linear:rho=1/4,guidance=attn_acc", "headkv:rho=1/4", "headkv:rho=1/4,match_total=true", "h2o:rho=1/4",
        "snapkv:rho=1/4", "rkv:rho=1/4"}) {
    auto policy = make_policy(spec, context);
    const int64_t budget = policy->budget_tokens();
    raster::RasterHooks hooks;
    hooks.policy = [&] { return policy.get(); };
    hooks.cache_capacity_tokens = policy->initial_entries();  // as GenerationSession sizes it
    int64_t checks = 0, violations = 0, mismatched_pairs = 0;
    hooks.on_token = [&](int64_t, const at::Tensor&, const KvStore& store) {
      for (int64_t l = 0; l < store.n_layer(); ++l) {
        at::Tensor counts = image_entry_counts(store, l, 1);
        violations += (counts > budget).sum().item<int64_t>();
        const at::Tensor& pos = store.positions_tensor(l);
        mismatched_pairs += !at::equal(pos.narrow(0, 0, 2), pos.narrow(0, 2, 2));
        ++checks;
      }
    };
    raster::RasterParams params;
    params.cfg_scale = 4.0;
    params.seed = 5;
    auto result = llamagen::generate_raster(*model.gpt, at::tensor({1, 7}, at::kLong), params, hooks);
    EXPECT_EQ(checks, 256 * cfg.n_layer) << spec;
    EXPECT_EQ(violations, 0) << spec;
    EXPECT_EQ(mismatched_pairs, 0) << spec;
    if (spec != "full") {
      EXPECT_LE(result.memory.bytes_logical, (budget + 1) * 4 * cfg.n_layer * cfg.kv_heads() * cfg.head_dim() * 2 * 4)
          << spec;
      EXPECT_LT(result.memory.bytes_logical, result.memory.bytes_full_equivalent) << spec;
      // Allocated never exceeds the declared worst case, and tracks logical for
      // every policy: segments are sized one by one (HeadKV's local heads shrink to
      // their window while its global heads grow to their budget).
      const int64_t per_entry_all = 4 * cfg.n_layer * cfg.kv_heads() * cfg.head_dim() * 2 * 4;  // 4 rows
      EXPECT_LE(result.memory.bytes_allocated, (policy->max_entries() + 1 + 16) * per_entry_all) << spec;
      EXPECT_LE(result.memory.bytes_allocated, result.memory.bytes_logical * 1.1 + 1) << spec;
      std::printf("  %-36s allocated / logical = %.3f, peak / full = %.3f\n", spec.c_str(),
                  static_cast<double>(result.memory.bytes_allocated) / result.memory.bytes_logical,
                  static_cast<double>(result.memory.bytes_peak) / result.memory.bytes_full_equivalent);
    }
  }
}

TEST(SessionEvents, RetainedMasksShowWhatTheCacheHolds) {
  struct Recorder : EventSink {
    std::vector<UnitDoneEvent> units;
    void on_event(const GenerationEvent& e) override {
      if (auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
    }
  };
  GenerationSession session;
  Recorder rec;
  GenerationRequest r;
  r.model_path = std::string(KVSTUDIO_SOURCE_DIR) + "/resources/models/llamagen-demo";
  r.class_ids = {4};
  r.device = "cpu";
  r.policy = parse_policy_spec("streaming:budget=40,sink=4");
  r.emit_retained_masks = true;
  session.run(r, &rec);
  ASSERT_EQ(rec.units.size(), 16u);
  const UnitDoneEvent& last = rec.units.back();
  ASSERT_TRUE(last.retained.has_value());
  const RetainedMasks& m = *last.retained;
  EXPECT_EQ(m.positions, 257);
  // At the last unit 255 tokens were fed: the condition, the 4 sinks (positions
  // 1..4) and the 36 most recent (positions 220..255) remain, in every layer and head.
  for (int64_t l = 0; l < m.n_layer; ++l)
    for (int64_t h = 0; h < m.kv_heads; ++h)
      for (int64_t p = 0; p < m.positions; ++p)
        ASSERT_EQ(m.retained(l, h, p), p <= 4 || (p >= 220 && p <= 255)) << l << " " << h << " " << p;
  EXPECT_EQ(last.retained_per_layer, std::vector<int64_t>(6, 41 * 8));
  // Attention maps: a distribution over positions that sums to 1, zero on future
  // positions and on positions streaming evicted long before this step (between
  // the sinks and the 36-token window).
  r.emit_attention_map = true;
  r.attention_layer = 2;
  r.attention_head = 5;
  Recorder maps;
  session.run(r, &maps);
  for (const auto& u : maps.units) {
    ASSERT_TRUE(u.attention.has_value());
    const int64_t q = u.attention->query_position;
    double total = 0;
    for (int64_t p = 0; p < u.attention->positions; ++p) {
      total += u.attention->weights[p];
      if (p > q || (p > 4 && p < q - 40)) {
        EXPECT_EQ(u.attention->weights[p], 0.0f) << p;
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-4);
  }
  EXPECT_EQ(maps.units[3].attention->query_position, 1 + 62);  // generated token 63
  // Masks and maps cost nothing unless asked for.
  r.emit_attention_map = false;
  r.emit_retained_masks = false;
  Recorder quiet;
  session.run(r, &quiet);
  EXPECT_FALSE(quiet.units.back().retained.has_value());
}

TEST(PolicySwitch, ChangeMidRunAdoptsTheCacheAndBadSpecsAreRefused) {
  struct Switcher : EventSink {
    GenerationSession* session = nullptr;
    std::vector<PolicyChangedEvent> changes;
    std::vector<UnitDoneEvent> units;
    void on_event(const GenerationEvent& e) override {
      if (auto* u = std::get_if<UnitDoneEvent>(&e)) {
        units.push_back(*u);
        if (u->unit_index == 5) session->request_policy_change("linear:rho=nonsense");
        if (u->unit_index == 7) session->request_policy_change("linear:rho=1/4");
      }
      if (auto* c = std::get_if<PolicyChangedEvent>(&e)) changes.push_back(*c);
    }
  };
  GenerationSession session;
  Switcher sink;
  sink.session = &session;
  GenerationRequest r;
  r.model_path = std::string(KVSTUDIO_SOURCE_DIR) + "/resources/models/llamagen-demo";
  r.class_ids = {2};
  r.device = "cpu";
  GenerationResult result = session.run(r, &sink);
  ASSERT_EQ(sink.changes.size(), 2u);
  EXPECT_FALSE(sink.changes[0].accepted);
  EXPECT_NE(sink.changes[0].message.find("expects a number"), std::string::npos);
  EXPECT_TRUE(sink.changes[1].accepted);
  EXPECT_EQ(sink.changes[1].unit_index, 7);
  EXPECT_EQ(sink.units[7].policy, "full");
  EXPECT_EQ(sink.units[8].policy, "linear:rho=1/4");
  // Bytes per cached token: 2 CFG rows x 6 layers x 8 heads x 32 dims x (K, V) x float32.
  const int64_t per_token = 2 * 6 * 8 * 32 * 2 * 4;
  // A unit ends when its last token is sampled; that token enters the cache at the
  // next step. So at unit 7 the full cache holds the condition + 127 tokens.
  EXPECT_EQ(sink.units[7].kv_bytes_logical, (1 + 127) * per_token);
  // The next step feeds token 127, ending line 7 in the cache: LineAR cuts the
  // adopted cache to B - n = 48 image entries; each later unit adds 15 more.
  for (int u = 8; u < 16; ++u) EXPECT_EQ(sink.units[u].kv_bytes_logical, (1 + 48 + 15) * per_token) << u;
  EXPECT_EQ(result.policy, "linear:rho=1/4");
}
