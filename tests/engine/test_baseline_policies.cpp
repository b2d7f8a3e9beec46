// Baseline policies (H2O, SnapKV, R-KV): exactly which positions survive on
// hand-built caches, grouped-query heads, CFG pairs (kept identical, decided on the
// conditional row), CFG dropped mid-run, adopting a bigger cache, and clear errors
// for impossible budgets.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <map>

#include "engine/cache/policies/h2o_policy.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

at::Tensor unit(int64_t axis, float scale = 1.0f) {
  at::Tensor v = at::zeros({4});
  v[axis] = scale;
  return v;
}

// Appends one entry at `position` to every segment: row r's key is keys[r] (a [4]
// vector), values carry the position so moves can be checked.
void append_rows(KvStore& store, int64_t position, const std::vector<at::Tensor>& keys) {
  at::Tensor k = at::zeros({store.rows(), store.kv_heads(), 1, store.head_dim()});
  for (int64_t r = 0; r < store.rows(); ++r)
    k.select(0, r).copy_(keys[std::min<size_t>(r, keys.size() - 1)].view({1, 1, 4}));
  store.append(0, k, at::ones_like(k) * static_cast<float>(position), {position});
}

void append_key(KvStore& store, int64_t position, const at::Tensor& key) { append_rows(store, position, {key}); }

// Queries [rows, n_head, 1, 4]: every row and head asks `q`.
at::Tensor queries(const KvStore& store, int64_t n_head, const at::Tensor& q) {
  return q.view({1, 1, 1, 4}).expand({store.rows(), n_head, 1, 4}).contiguous();
}

int64_t image_count(const KvStore& store, int64_t row = 0) {
  return image_entry_counts(store, 0, 1)[row][0].item<int64_t>();
}

}  // namespace

TEST(H2OPolicy, KeepsHeavyHittersByAccumulatedAttentionPerPosition) {
  // 4x4 grid, B = 4: recent window 2, heavy hitters 2. Evicts every token.
  PolicyContext c = test::small_policy_context(4);
  auto policy = make_policy("h2o:budget=4", c);
  EXPECT_EQ(policy->max_entries(), 5);
  EXPECT_TRUE(policy->wants_key_mass());
  KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
  append_key(store, 0, unit(0));  // condition
  // Attention each position receives at every step it is present (by POSITION:
  // slots move after evictions, the hand-made key_mass follows them).
  const std::map<int64_t, double> mass = {{0, 9.0}, {1, 5.0}, {2, 0.1}, {3, 0.2}, {4, 3.0},
                                          {5, 0.1}, {6, 0.1}, {7, 0.1}, {8, 0.1}};
  for (int64_t i = 0; i < 8; ++i) {
    append_key(store, 1 + i, unit(0));
    const int64_t length = store.max_length(0);
    at::Tensor positions = store.positions_tensor(0).narrow(2, 0, length);
    at::Tensor key_mass = at::zeros({1, 1, length});
    for (int64_t j = 0; j < length; ++j) key_mass[0][0][j] = mass.at(positions[0][0][j].item<int64_t>());
    policy->observe_attention(0, i, key_mass, positions);
    policy->after_token(store, i);
    EXPECT_LE(image_count(store), 4);
  }
  // Accumulated after token 4: pos1 25, pos2 0.4, pos3 0.6 (pos4, 5 recent) -> pos2 goes;
  // then pos3 (0.8), pos5 (0.3), pos6 (0.3 vs pos1 40, pos4 15) go one per token.
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 4, 7, 8}));
  EXPECT_EQ(store.values(0, store.max_length(0))[0][0][2][0].item<float>(), 4.0f);  // values moved with their keys
}

TEST(H2OPolicy, CfgPairsFollowTheConditionalRowAndSurviveDroppingCfg) {
  PolicyContext c = test::small_policy_context(4, /*rows=*/2, /*cfg=*/true);
  for (const std::string spec : {"h2o:budget=4", "h2o:budget=4,cfg_decision=both"}) {
    auto policy = make_policy(spec, c);
    KvStore store(1, 2, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
    append_key(store, 0, unit(0));
    for (int64_t i = 0; i < 12; ++i) {
      if (i == 8) store.keep_rows(0, 1);  // CFG ends: only the conditional row remains
      append_key(store, 1 + i, unit(0));
      const int64_t length = store.max_length(0), rows = store.rows();
      at::Tensor positions = store.positions_tensor(0).narrow(2, 0, length);
      // Conditional row: odd positions are heavy; unconditional row: the reverse (and weaker).
      at::Tensor parity = (positions % 2).to(at::kFloat);
      at::Tensor key_mass = at::cat({parity.narrow(0, 0, 1), ((1 - parity) * 0.5).narrow(0, 0, 1)}).narrow(0, 0, rows);
      policy->observe_attention(0, i, key_mass, positions);
      policy->after_token(store, i);
      EXPECT_LE(image_entry_counts(store, 0, 1).max().item<int64_t>(), 4) << spec;
      if (rows == 2) {
        EXPECT_EQ(store.positions(0, 0, 0), store.positions(0, 1, 0)) << spec;
      }
    }
    // Heavy hitters: odd positions (the conditional row decides; with `both` its
    // weight 1 beats the unconditional 0.5). Recent: the last two positions.
    const auto kept = store.positions(0, 0, 0);
    ASSERT_EQ(kept.size(), 5u) << spec;
    EXPECT_EQ(kept[0], 0);
    EXPECT_EQ(kept[1] % 2, 1) << spec;
    EXPECT_EQ(kept[2] % 2, 1) << spec;
    EXPECT_EQ(std::vector<int64_t>(kept.end() - 2, kept.end()), (std::vector<int64_t>{11, 12})) << spec;
  }
}

TEST(SnapKvPolicy, KeepsTheObservationWindowAndTheMostVotedEntries) {
  // 4x4 grid (n = 4), B = 10, window = one line: at the end of line 2 the segment
  // holds 8 > B - n = 6, so 2 of the 4 entries older than the window go.
  const float strength[4] = {2.0f, -1.0f, 3.0f, 0.5f};  // keys of tokens 0..3 (x e0); queries are e0
  for (const auto& [spec, survivors] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           // No pooling: the two strongest (tokens 0 and 2 -> positions 1, 3) stay.
           {"snapkv:budget=10,kernel=1", {0, 1, 3, 5, 6, 7, 8}},
           // Kernel 3: pooled votes are s0, s2, s2, s2 -> token 0 goes, then the older
           // of the tied tokens 1..3.
           {"snapkv:budget=10,kernel=3", {0, 3, 4, 5, 6, 7, 8}}}) {
    PolicyContext c = test::small_policy_context(4);
    auto policy = make_policy(spec, c);
    EXPECT_EQ(policy->max_entries(), 10);
    EXPECT_TRUE(policy->wants_queries());
    KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
    append_key(store, 0, unit(0, 0.0f));
    for (int64_t i = 0; i < 8; ++i) {
      append_key(store, 1 + i, unit(0, i < 4 ? strength[i] : 0.0f));
      policy->observe_queries(0, i, queries(store, 1, unit(0)));
      policy->after_token(store, i);
    }
    EXPECT_EQ(store.positions(0, 0, 0), survivors) << spec;
    // Next line: no eviction until its end, then back to B - n with the window kept.
    for (int64_t i = 8; i < 12; ++i) {
      append_key(store, 1 + i, unit(0, 1.0f));
      policy->observe_queries(0, i, queries(store, 1, unit(0)));
      policy->after_token(store, i);
      EXPECT_LE(image_count(store), 10);
    }
    const auto kept = store.positions(0, 0, 0);
    EXPECT_EQ(image_count(store), 6);
    EXPECT_EQ(kept.front(), 0);
    EXPECT_EQ(std::vector<int64_t>(kept.end() - 4, kept.end()), (std::vector<int64_t>{9, 10, 11, 12})) << spec;
  }
}

TEST(SnapKvPolicy, GroupedQueryHeadsVoteTogetherAndCfgPairsMatch) {
  // Two query heads share one KV head: head 0 asks e0, head 1 asks e1. Token 1's key
  // (3 e1) only wins head 1's vote; with both heads summed it beats token 2 (e0).
  PolicyContext c = test::small_policy_context(4, /*rows=*/2, /*cfg=*/true, /*n_head=*/2, /*kv_heads=*/1);
  auto policy = make_policy("snapkv:budget=10,kernel=1", c);
  KvStore store(1, 2, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
  append_key(store, 0, unit(0, 0.0f));
  const std::vector<at::Tensor> cond_keys = {unit(0, 3.0f), unit(1, 3.0f), unit(0, 1.0f), unit(0, 0.0f)};
  at::Tensor q = at::zeros({2, 2, 1, 4});
  q[0][0][0][0] = 1.0f;
  q[0][1][0][1] = 1.0f;
  q[1] = at::randn({2, 1, 4});  // the unconditional row asks something else: it must not decide
  for (int64_t i = 0; i < 8; ++i) {
    append_rows(store, 1 + i, {i < 4 ? cond_keys[i] : unit(2, 0.0f), at::randn({4}) * 3});
    policy->observe_queries(0, i, q);
    policy->after_token(store, i);
  }
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 2, 5, 6, 7, 8}));
  EXPECT_EQ(store.positions(0, 1, 0), store.positions(0, 0, 0));
}

TEST(RkvPolicy, EvictsTheMostRedundantKeysWhenRedundancyDecides) {
  // lambda = 0: only redundancy. Tokens 0..2 share one key direction (mean cosine
  // 2/7 to the other image keys), token 3 is orthogonal to all (0): the two oldest
  // duplicates go, token 2 (the last copy) and token 3 stay.
  PolicyContext c = test::small_policy_context(4);
  auto policy = make_policy("rkv:budget=10,lambda=0,kernel=1", c);
  EXPECT_EQ(policy->max_entries(), 10);
  KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
  append_key(store, 0, unit(0, 0.0f));
  const std::vector<at::Tensor> keys = {unit(0, 1.0f), unit(0, 2.0f), unit(0, 0.5f), unit(1, 1.0f),
                                        unit(2, 1.0f), unit(2, 1.0f), unit(2, 1.0f), unit(2, 1.0f)};
  for (int64_t i = 0; i < 8; ++i) {
    append_key(store, 1 + i, keys[i]);
    policy->observe_queries(0, i, queries(store, 1, unit(0)));  // favours tokens 0..2: ignored at lambda 0
    policy->after_token(store, i);
  }
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 3, 4, 5, 6, 7, 8}));
}

TEST(RkvPolicy, ImportanceDecidesAtLambdaOneRedundancyAtZero) {
  const float strength[4] = {2.0f, -1.0f, 3.0f, 0.5f};
  auto run = [&](const std::string& spec, const std::vector<at::Tensor>& extra) {
    PolicyContext c = test::small_policy_context(4);
    auto policy = make_policy(spec, c);
    KvStore store(1, 1, 1, 4, 1 + policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
    append_key(store, 0, unit(0, 0.0f));
    for (int64_t i = 0; i < 8; ++i) {
      at::Tensor key = i < 4 ? unit(0, strength[i]) + extra[i] : unit(3, 1.0f);
      append_key(store, 1 + i, key);
      policy->observe_queries(0, i, queries(store, 1, unit(0)));
      policy->after_token(store, i);
    }
    return store.positions(0, 0, 0);
  };
  const std::vector<at::Tensor> none(4, at::zeros({4}));
  // lambda = 1: SnapKV's choice (the two strongest, tokens 0 and 2).
  EXPECT_EQ(run("rkv:budget=10,lambda=1,kernel=1", none), (std::vector<int64_t>{0, 1, 3, 5, 6, 7, 8}));
  // Keys of tokens 0, 2 and 3 point along e0 (cosine 1 with each other); token 1 along
  // -e0 (cosine -1). At lambda = 0 the three aligned keys are the redundant ones: the
  // two oldest (tokens 0 and 2) go although they have the most attention.
  EXPECT_EQ(run("rkv:budget=10,lambda=0,kernel=1", none), (std::vector<int64_t>{0, 2, 4, 5, 6, 7, 8}));
}

TEST(BaselinePolicies, AdoptABiggerCacheAndSurviveCfgEnding) {
  for (const std::string spec : {"h2o:budget=6", "snapkv:budget=10", "rkv:budget=10"}) {
    // Adoption: 12 tokens cached uncompressed, the policy takes over at token 8.
    PolicyContext c = test::small_policy_context(4);
    auto policy = make_policy(spec, c);
    const int64_t budget = policy->budget_tokens();
    KvStore store(1, 1, 1, 4, 18, at::TensorOptions().dtype(at::kFloat));
    append_key(store, 0, unit(0, 0.0f));
    for (int64_t i = 0; i < 8; ++i) append_key(store, 1 + i, at::randn({4}));
    for (int64_t i = 8; i < 16; ++i) {
      append_key(store, 1 + i, at::randn({4}));
      if (policy->wants_queries()) policy->observe_queries(0, i, queries(store, 1, at::randn({4})));
      if (policy->wants_key_mass()) {
        const int64_t length = store.max_length(0);
        policy->observe_attention(0, i, at::rand({1, 1, length}), store.positions_tensor(0).narrow(2, 0, length));
      }
      policy->after_token(store, i);
      if (i >= 11) {
        EXPECT_LE(image_count(store), budget) << spec << " token " << i;
      }
    }
    EXPECT_EQ(store.positions(0, 0, 0).front(), 0) << spec;
    EXPECT_EQ(store.positions(0, 0, 0).back(), 16) << spec;

    // CFG pairs, then CFG dropped mid-run: the conditional row goes on alone.
    PolicyContext cc = test::small_policy_context(4, /*rows=*/2, /*cfg=*/true, /*n_head=*/2, /*kv_heads=*/1);
    auto cfg_policy = make_policy(spec, cc);
    KvStore pairs(1, 2, 1, 4, 1 + cfg_policy->max_entries(), at::TensorOptions().dtype(at::kFloat));
    append_key(pairs, 0, unit(0, 0.0f));
    for (int64_t i = 0; i < 16; ++i) {
      if (i == 6) pairs.keep_rows(0, 1);
      append_rows(pairs, 1 + i, {at::randn({4}), at::randn({4})});
      if (cfg_policy->wants_queries()) cfg_policy->observe_queries(0, i, at::randn({pairs.rows(), 2, 1, 4}));
      if (cfg_policy->wants_key_mass()) {
        const int64_t length = pairs.max_length(0);
        cfg_policy->observe_attention(0, i, at::rand({pairs.rows(), 1, length}),
                                      pairs.positions_tensor(0).narrow(2, 0, length));
      }
      cfg_policy->after_token(pairs, i);
      EXPECT_LE(image_entry_counts(pairs, 0, 1).max().item<int64_t>(), cfg_policy->budget_tokens()) << spec;
      if (pairs.rows() == 2) {
        EXPECT_EQ(pairs.positions(0, 0, 0), pairs.positions(0, 1, 0)) << spec;
      }
    }
    EXPECT_EQ(pairs.capacity(0), 1 + cfg_policy->max_entries()) << spec << ": the store never grew";
  }
}

TEST(BaselinePolicies, RegisteredWithClearErrorsForImpossibleBudgets) {
  const auto& registry = policy_registry();
  ASSERT_GE(registry.size(), 3u);
  EXPECT_EQ(registry[registry.size() - 3].name, "h2o");
  EXPECT_EQ(registry[registry.size() - 2].name, "snapkv");
  EXPECT_EQ(registry[registry.size() - 1].name, "rkv");
  PolicyContext c = test::small_policy_context(16);
  EXPECT_EQ(make_policy("h2o:rho=1/4", c)->budget_tokens(), 64);
  EXPECT_EQ(dynamic_cast<H2OPolicy&>(*make_policy("h2o:rho=1/4", c)).recent_tokens(), 32);
  EXPECT_EQ(dynamic_cast<H2OPolicy&>(*make_policy("h2o:budget=9,recent=1/3", c)).recent_tokens(), 3);
  EXPECT_NE(test::policy_error("h2o:budget=8,recent=1", c)
                .find("policy h2o: budget 8 tokens is impossible: it must exceed the 8 recent-window tokens"),
            std::string::npos);
  EXPECT_NE(test::policy_error("h2o:recent=3/2", c).find("policy h2o: recent"), std::string::npos);
  EXPECT_NE(test::policy_error("h2o:cfg_decision=maybe", c).find("must be one of cond, both"), std::string::npos);
  EXPECT_NE(test::policy_error("h2o:rho=0", c).find("rho 0 is impossible"), std::string::npos);
  // SnapKV / R-KV: B must hold the window, the one-line buffer and one scored token.
  EXPECT_NE(test::policy_error("snapkv:budget=32", c).find("policy snapkv: budget 32 tokens is impossible"),
            std::string::npos);
  EXPECT_NE(test::policy_error("snapkv:budget=32", c).find("at least 33 tokens"), std::string::npos);
  EXPECT_EQ(make_policy("snapkv:budget=33", c)->budget_tokens(), 33);
  EXPECT_NE(test::policy_error("snapkv:kernel=4", c).find("policy snapkv: kernel must be an odd number"),
            std::string::npos);
  EXPECT_NE(test::policy_error("snapkv:window=-2", c).find("policy snapkv: window must be >= 1"), std::string::npos);
  EXPECT_NE(test::policy_error("rkv:budget=24,window=8", c).find("policy rkv: budget 24 tokens is impossible"),
            std::string::npos);
  EXPECT_NE(test::policy_error("rkv:budget=24,window=8", c).find("at least 25 tokens"), std::string::npos);
  EXPECT_NE(test::policy_error("rkv:lambda=2", c).find("policy rkv: lambda"), std::string::npos);
  EXPECT_NE(test::policy_error("rkv:lambda=abc", c).find("parameter lambda expects a number"), std::string::npos);
  EXPECT_EQ(make_policy("rkv:rho=1/4", c)->max_entries(), 64);
}
