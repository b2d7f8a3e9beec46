// HeadKV (`headkv`): on hand-built caches where one KV head clearly attends
// locally and the other globally, exactly which positions survive at grouping and
// at later line ends (local sliding window; global recent lines + Stratified Token
// Eviction); the paper's memory model by default (global heads keep B) and
// match_total's shared budget; budgets never exceeded over whole sequences; CFG
// pairs mirrored and CFG dropped mid-run; grouped-query heads; a longer cache
// adopted at once; errors.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine/cache/policies/headkv_policy.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

constexpr int64_t kDim = 4;

// 4x4 grid (n = 4, N = 16), two KV heads.
PolicyContext small_context(int64_t n_head, int64_t rows = 1, bool cfg = false) {
  return test::small_policy_context(4, rows, cfg, n_head, /*kv_heads=*/2);
}

HeadKvPolicy& as_headkv(const std::unique_ptr<CachePolicy>& p) { return dynamic_cast<HeadKvPolicy&>(*p); }

// KV head 0 ("local"): key e0 for positions >= local_from, else 0, so a query along
// e0 looks only at the newest tokens. KV head 1 ("global"): position 1 has key e1
// (a long-range token the e1 queries always find); every other image token has key
// saliency[p] x e2, which orders the Stratified Token Eviction scores.
at::Tensor token_key(int64_t position, int64_t local_from) {
  static const float saliency[17] = {0, 0, 3, -1, 1, -3, -2, -4, -1, 0.5f, -0.5f, 2, 1, 0, 0, 0, 0};
  at::Tensor k = at::zeros({2, kDim});
  if (position >= local_from) k[0][0] = 1.0f;
  if (position == 1) k[1][1] = 1.0f;
  else if (position > 0) k[1][2] = saliency[position];
  return k;  // [kv, D]
}

void append(KvStore& store, int64_t position, int64_t local_from) {
  at::Tensor k =
      token_key(position, local_from).unsqueeze(0).unsqueeze(2).expand({store.rows(), 2, 1, kDim}).contiguous();
  store.append(0, k, at::ones_like(k) * static_cast<float>(position), {position});
}

// Query heads: `local` ones along 20 e0, the others along 20 e1 + e2 (kv head = h / group).
at::Tensor queries(int64_t rows, const std::vector<bool>& local_heads) {
  const int64_t n_head = static_cast<int64_t>(local_heads.size());
  at::Tensor q = at::zeros({rows, n_head, 1, kDim});
  for (int64_t h = 0; h < n_head; ++h) {
    if (local_heads[h]) {
      q.select(1, h).select(2, 0).fill_(20.0f);
    } else {
      q.select(1, h).select(2, 1).fill_(20.0f);
      q.select(1, h).select(2, 2).fill_(1.0f);
    }
  }
  return q;
}

using Positions = std::vector<int64_t>;

// Feeds image tokens first..last (raster indices) with the local/global queries.
void feed(CachePolicy& policy, KvStore& store, int64_t first, int64_t last, const std::vector<bool>& local_heads,
          int64_t local_from) {
  for (int64_t i = first; i <= last; ++i) {
    append(store, 1 + i, local_from);
    policy.observe_queries(0, i, queries(store.rows(), local_heads));
    policy.after_token(store, i);
  }
}

// B = 3 lines, W = 2 lines, R = 2 lines; the window and the recent lines end
// with the line under way (the one-line buffer of periodic updates).
const char* kExactSpec = "headkv:budget=12,threshold=14,local_window=8,recent_lines=2,match_total=false";
// The same budget with a one-line window, for the grouping tests (span < W = 4).
const char* kGroupingSpec = "headkv:budget=12,threshold=14,local_window=4,recent_lines=1,match_total=false";

}  // namespace

TEST(HeadKvPolicy, GroupsHeadsAndKeepsExactlyTheExpectedPositions) {
  // 4x4 grid, B = 12, W = 8, R = 2 lines, alpha = 1/2; grouping when the cache holds
  // 14 entries: after token 12 (position 13), one token into line 3.
  auto policy = make_policy(kExactSpec, small_context(2));
  auto& headkv = as_headkv(policy);
  EXPECT_EQ(headkv.rho_budget(), 12);
  EXPECT_EQ(policy->max_entries(), 13);  // the 13 image entries just before grouping
  KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
  const int64_t capacity = store.capacity(0);
  append(store, 0, 12);  // condition token (zero key)
  feed(*policy, store, 0, 11, {true, false}, 12);
  // Prefilling: three full lines, nothing evicted, nothing grouped.
  EXPECT_FALSE(headkv.grouped(0));
  for (int64_t h = 0; h < 2; ++h) EXPECT_EQ(store.positions(0, 0, h).size(), 13u);
  feed(*policy, store, 12, 12, {true, false}, 12);
  ASSERT_TRUE(headkv.grouped(0));
  // Head 0: ~all image attention on positions 12, 13 -> span 2 < W: local. Head 1:
  // ~all on position 1 -> span 13 >= W: global.
  EXPECT_FALSE(headkv.is_global(0, 0, 0));
  EXPECT_TRUE(headkv.is_global(0, 0, 1));
  EXPECT_EQ(headkv.global_budget(0, 0), 12);
  // Local: the window W less the line under way, plus its one token: positions 9..13.
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 9, 10, 11, 12, 13}));
  // Global: target B - n + 1 = 9; recent: the line before the one under way and its
  // token = 9..13; history 1..8 splits
  // into long 1..4 and near 5..8; 2 evictions each, by lowest saliency (long: 3, 4;
  // near: 7, 5). Unstratified, the near part (all scores below the long part) would
  // have lost 7, 5, 6 and the long part only 3.
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 6, 8, 9, 10, 11, 12, 13}));
  // Values moved with their keys.
  EXPECT_EQ(store.values(0, store.max_length(0))[0][1][3][0].item<float>(), 6.0f);
  // Buffered: nothing more until the line ends.
  feed(*policy, store, 13, 14, {true, false}, 12);
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(store.positions(0, 0, 1).size(), 12u);
  feed(*policy, store, 15, 15, {true, false}, 12);
  // Line end: local keeps the W - n newest; global back to B - n = 8: the finished
  // line 13..16 stays recent, history 1, 2, 6, 8 | 9, 10, 11, 12 (long loses 6, 8;
  // near loses 10, 9).
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 13, 14, 15, 16}));
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(store.capacity(0), capacity);
}

// tau (HeadKV Table 5's grouping threshold): the attention mass the span must
// hold. Head 0's query gives positions 12 and 13 87.5 % of the image attention and
// spreads the rest evenly over the 11 older image tokens (about 1.1 % each).
TEST(HeadKvPolicy, TauDecidesHowMuchAttentionTheSpanMustHold) {
  auto head0_global = [](const std::string& tau) {
    auto policy = make_policy(std::string(kGroupingSpec) + ",tau=" + tau, small_context(2));
    auto& headkv = as_headkv(policy);
    KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
    append(store, 0, 12);
    // 2 e^a / (2 e^a + 11) = 0.875 for a = ln 38.5 = 3.65; the logit is q.k / sqrt(4).
    at::Tensor q = at::zeros({1, 2, 1, kDim});
    q[0][0][0][0] = 7.3f;
    q[0][1][0][1] = 20.0f;  // head 1: the global query of the tests above
    q[0][1][0][2] = 1.0f;
    for (int64_t i = 0; i <= 12; ++i) {
      append(store, 1 + i, 12);
      policy->observe_queries(0, i, q);
      policy->after_token(store, i);
    }
    EXPECT_TRUE(headkv.grouped(0));
    EXPECT_TRUE(headkv.is_global(0, 0, 1)) << tau;
    return headkv.is_global(0, 0, 0);
  };
  // tau = 0.85: positions 13, 12 hold it, a span of 2 < W = 4: local.
  EXPECT_FALSE(head0_global("0.85"));
  // tau = 0.9 needs three more tokens (span 5), tau = 0.95 seven (span 9): global.
  EXPECT_TRUE(head0_global("0.9"));
  EXPECT_TRUE(head0_global("0.95"));
}

TEST(HeadKvPolicy, DefaultMemoryIsThePapersGlobalHeadsKeepBLocalHeadsTheirWindow) {
  // No match_total given: the paper's memory model (§5.1, Table 4), the exact
  // test's positions, and a mean per-head peak below B (LineAR keeps B in every head).
  auto policy = make_policy("headkv:budget=12,threshold=14,local_window=8,recent_lines=2", small_context(2));
  auto& headkv = as_headkv(policy);
  EXPECT_EQ(policy->max_entries(), 13);  // the pre-grouping cache, not a global head above B
  KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
  append(store, 0, 12);
  feed(*policy, store, 0, 12, {true, false}, 12);
  EXPECT_EQ(headkv.global_budget(0, 0), 12);
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 9, 10, 11, 12, 13}));
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 6, 8, 9, 10, 11, 12, 13}));
  feed(*policy, store, 13, 15, {true, false}, 12);
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 13, 14, 15, 16}));
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 11, 12, 13, 14, 15, 16}));
  // Per-head peaks: local W = 8, global B = 12; mean 10 < B.
  EXPECT_EQ((4 + 4 + headkv.global_budget(0, 0)) / 2, 10);
  // The registry states the default the window and the CLI show.
  const PolicyParamSpec* param = find_policy("headkv").find_param("match_total");
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(param->default_value, "false");
}

TEST(HeadKvPolicy, MatchTotalGivesGlobalHeadsWhatLocalHeadsLeave) {
  auto policy = make_policy("headkv:budget=12,threshold=14,local_window=8,recent_lines=2,match_total=true",
                            small_context(2));
  auto& headkv = as_headkv(policy);
  // Worst case: one global head next to a local one: 2 x 12 - 8 = 16 = N.
  EXPECT_EQ(policy->max_entries(), 16);
  KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
  append(store, 0, 12);
  feed(*policy, store, 0, 12, {true, false}, 12);
  EXPECT_EQ(headkv.global_budget(0, 0), 16);
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 9, 10, 11, 12, 13}));
  EXPECT_EQ(store.positions(0, 0, 1).size(), 14u);  // target 16 - 4 + 1 = 13: nothing to evict yet
  feed(*policy, store, 13, 15, {true, false}, 12);
  // Line end: G - n = 12. Recent: the finished line 13..16; history 1..12 = long
  // 1..6 (loses 5, 6) and near 7..12 (loses 7, 8).
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 13, 14, 15, 16}));
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 3, 4, 9, 10, 11, 12, 13, 14, 15, 16}));
  // Mean over heads of the per-head peak (local W, global G) is B.
  EXPECT_EQ((4 + 4 + headkv.global_budget(0, 0)) / 2, 12);
}

TEST(HeadKvPolicy, GroupedQueryHeadsMakeAKvHeadGlobalIfAnyOfItsQueryHeadsIs) {
  // 4 query heads on 2 KV heads: heads 0, 1 -> kv 0; heads 2, 3 -> kv 1.
  {
    auto policy = make_policy(kExactSpec, small_context(4));
    KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
    append(store, 0, 12);
    // Query head 2 looks along e0, which KV head 1's keys lack: uniform, hence global;
    // in STE it adds the same constant to every score of a part, so the choice is
    // that of head 3 alone and matches the one-query-head case exactly.
    feed(*policy, store, 0, 15, {true, true, true, false}, 12);
    EXPECT_FALSE(as_headkv(policy).is_global(0, 0, 0));
    EXPECT_TRUE(as_headkv(policy).is_global(0, 0, 1));
    EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 13, 14, 15, 16}));
    EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 11, 12, 13, 14, 15, 16}));
  }
  {
    auto policy = make_policy(kExactSpec, small_context(4));
    KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
    append(store, 0, 12);
    // Query head 1 spreads over all of KV head 0's keys: KV head 0 becomes global.
    feed(*policy, store, 0, 12, {true, false, true, false}, 12);
    EXPECT_TRUE(as_headkv(policy).is_global(0, 0, 0));
    EXPECT_TRUE(as_headkv(policy).is_global(0, 0, 1));
  }
}

TEST(HeadKvPolicy, CfgPairsMirrorTheConditionalDecisionAndSurviveDroppingCfg) {
  auto policy = make_policy(kExactSpec, small_context(2, /*rows=*/2, /*cfg=*/true));
  KvStore store(1, 2, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
  store.append(0, at::zeros({2, 2, 1, kDim}), at::zeros({2, 2, 1, kDim}), {0});
  at::manual_seed(3);
  for (int64_t i = 0; i <= 12; ++i) {
    // Row 0 as in the exact test; row 1 (unconditional) gets random keys and queries.
    at::Tensor k = at::cat({token_key(1 + i, 12).unsqueeze(0), at::randn({1, 2, kDim})}).unsqueeze(2);
    store.append(0, k, k, {1 + i});
    at::Tensor q = at::cat({queries(1, {true, false}), at::randn({1, 2, 1, kDim}) * 5});
    policy->observe_queries(0, i, q);
    policy->after_token(store, i);
    EXPECT_EQ(store.positions(0, 0, 0), store.positions(0, 1, 0));
    EXPECT_EQ(store.positions(0, 0, 1), store.positions(0, 1, 1));
  }
  EXPECT_EQ(store.positions(0, 1, 0), (Positions{0, 9, 10, 11, 12, 13}));
  EXPECT_EQ(store.positions(0, 1, 1), (Positions{0, 1, 2, 6, 8, 9, 10, 11, 12, 13}));
  // CFG ends: the conditional rows stay and keep their decisions.
  store.keep_rows(0, 1);
  feed(*policy, store, 13, 15, {true, false}, 12);
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 13, 14, 15, 16}));
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 11, 12, 13, 14, 15, 16}));
}

TEST(HeadKvPolicy, AdoptsALongerCacheAndEvictsAsManyAsNeeded) {
  // The whole grid is cached before the policy sees a step: it groups at its first
  // step and cuts every head at once (global: 8 history evictions, 4 per part).
  auto policy = make_policy(kExactSpec, small_context(2));
  KvStore store(1, 1, 2, kDim, 17, at::TensorOptions().dtype(at::kFloat));
  append(store, 0, 15);
  for (int64_t i = 0; i < 15; ++i) append(store, 1 + i, 15);
  feed(*policy, store, 15, 15, {true, false}, 15);
  EXPECT_EQ(store.positions(0, 0, 0), (Positions{0, 13, 14, 15, 16}));
  // History 1..12: long 1..6 keeps 1, 2; near 7..12 keeps 11, 12.
  EXPECT_EQ(store.positions(0, 0, 1), (Positions{0, 1, 2, 11, 12, 13, 14, 15, 16}));
}

TEST(HeadKvPolicy, ConditionMassChoice) {
  // One KV head whose query scores the condition (zero key) and positions 4, 5 alike
  // (logit 0) and positions 1..3 far lower: a third of its mass is on the sink.
  auto type_with = [](const std::string& cond_mass) {
    PolicyContext c = small_context(1);
    c.kv_heads = 1;
    auto policy = make_policy("headkv:budget=12,threshold=6,local_window=4,recent_lines=1,cond_mass=" + cond_mass, c);
    KvStore store(1, 1, 1, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
    at::Tensor q = at::zeros({1, 1, 1, kDim});
    q.select(3, 0).fill_(20.0f);
    for (int64_t p = 0; p <= 5; ++p) {
      at::Tensor k = at::zeros({1, 1, 1, kDim});
      if (p >= 1 && p <= 3) k.select(3, 0).fill_(-1.0f);
      store.append(0, k, k, {p});
      if (p == 0) continue;
      policy->observe_queries(0, p - 1, q);
      policy->after_token(store, p - 1);
    }
    return as_headkv(policy).is_global(0, 0, 0);
  };
  EXPECT_FALSE(type_with("exclude"));  // image mass: all on 4, 5 -> span 2
  EXPECT_FALSE(type_with("free"));     // sink counted as covered: 1/3 + 2/3 -> span 2
  EXPECT_TRUE(type_with("include"));   // 0.9 needs the sink, reached last: global
}

TEST(HeadKvPolicy, BudgetNeverExceededOverWholeSequences) {
  // 8x8 grid, 2 layers, 8 query heads on 4 KV heads, CFG pair. Keys grow along e0
  // with the position, and query heads look along e0 with different strengths, so
  // some heads are local and others global.
  PolicyContext c;
  c.n_layer = 2;
  c.n_head = 8;
  c.kv_heads = 4;
  c.head_dim = 8;
  c.grid_height = c.grid_width = 8;
  c.batch = 1;
  c.cfg = true;
  int64_t locals = 0, globals = 0;
  for (const std::string spec :
       {"headkv:rho=1/2,threshold=20", "headkv:rho=1/2,threshold=20,match_total=true",
        "headkv:rho=1/2,threshold=30,match_total=false",
        "headkv:rho=3/4,local_window=8,cfg_decision=both,alpha=1,threshold=40",
        "headkv:rho=1/2,alpha=0,cond_mass=include,threshold=1", "headkv:rho=1/2,threshold=64"}) {
    auto policy = make_policy(spec, c);
    auto& headkv = as_headkv(policy);
    const int64_t bound = policy->max_entries();
    EXPECT_EQ(policy->budget_tokens(), bound) << spec;
    KvStore store(2, 2, 4, 8, 1 + bound + 1, at::TensorOptions().dtype(at::kFloat));
    const int64_t capacity = store.capacity(0);
    at::manual_seed(11);
    at::Tensor strength = at::tensor({6.0f, 4.0f, 0.0f, 0.5f, 8.0f, 0.0f, 2.0f, 0.1f}).reshape({1, 8, 1});
    for (int64_t l = 0; l < 2; ++l) store.append(l, at::zeros({2, 4, 1, 8}), at::zeros({2, 4, 1, 8}), {0});
    for (int64_t i = 0; i < 64; ++i) {
      for (int64_t l = 0; l < 2; ++l) {
        at::Tensor k = at::randn({2, 4, 1, 8}) * 0.3;
        k.select(3, 0).fill_(0.5f * static_cast<float>(1 + i));
        store.append(l, k, k, {1 + i});
        at::Tensor q = at::randn({2, 8, 1, 8}) * 0.3;
        q.select(3, 0).copy_(strength.expand({2, 8, 1}));
        policy->observe_queries(l, i, q);
      }
      policy->after_token(store, i);
      for (int64_t l = 0; l < 2; ++l) {
        at::Tensor counts = image_entry_counts(store, l, 1);
        ASSERT_LE(counts.max().item<int64_t>(), bound) << spec << " token " << i;
        const at::Tensor& pos = store.positions_tensor(l);
        ASSERT_TRUE(at::equal(pos.narrow(0, 0, 1), pos.narrow(0, 1, 1))) << spec << " token " << i;
        if ((i + 1) % 8 == 0 && headkv.grouped(l) && i + 1 >= 40) {
          // After a line end the mean over heads is at most B - n (equal with match_total
          // unless capped at N or not yet filled).
          EXPECT_LE(counts[0].sum().item<int64_t>(), 4 * (headkv.rho_budget() - 8)) << spec << " token " << i;
        }
      }
    }
    EXPECT_EQ(store.capacity(0), capacity) << spec;
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t h = 0; h < 4; ++h) (headkv.is_global(l, 0, h) ? globals : locals) += 1;
  }
  EXPECT_GT(locals, 0);
  EXPECT_GT(globals, 0);
}

TEST(HeadKvPolicy, ClearErrorsForImpossibleParameters) {
  PolicyContext c = small_context(2);
  c.grid_height = c.grid_width = 16;
  EXPECT_NE(test::policy_error("headkv:tau=0", c).find("policy headkv: tau 0 is impossible (must be 0 < tau <= 1)"),
            std::string::npos);
  EXPECT_NE(test::policy_error("headkv:tau=1.5", c).find("tau 1.5 is impossible"), std::string::npos);
  EXPECT_NE(test::policy_error("headkv:alpha=-0.1", c)
                .find("policy headkv: alpha -0.1 is impossible (must be 0 <= alpha <= 1)"),
            std::string::npos);
  EXPECT_NE(test::policy_error("headkv:alpha=3/2", c).find("alpha 1.5 is impossible"), std::string::npos);
  EXPECT_NE(
      test::policy_error("headkv:rho=1/16", c)
          .find("policy headkv: budget 16 tokens is impossible: B (16 after rounding down to whole lines of 16) must "
                "hold the 2 recent line(s) of global heads (the line being generated among them) and more than a "
                "local head's one line: at least 32 tokens"),
      std::string::npos);
  EXPECT_NE(test::policy_error("headkv:rho=1/4,local_window=64", c)
                .find("local_window 64 tokens is impossible with B = 64: a local head keeps less than a global head "
                      "(local_window must be in 16..63)"),
            std::string::npos);
  EXPECT_NE(test::policy_error("headkv:rho=1/4,local_window=8", c)
                .find("local_window 8 tokens is impossible: a local head's window holds the line being generated (16 "
                      "tokens"),
            std::string::npos);
  EXPECT_NE(test::policy_error("headkv:rho=1/4,recent_lines=0", c).find("recent_lines"), std::string::npos);
  // Two lines: global heads keep the line before the one under way; the default
  // window shrinks to one line, below them.
  auto two_lines = make_policy("headkv:rho=1/8", c);
  EXPECT_EQ(as_headkv(two_lines).rho_budget(), 32);
  EXPECT_EQ(as_headkv(two_lines).local_window(), 16);
  EXPECT_NE(
      test::policy_error("headkv:rho=1/4,threshold=300", c).find("threshold 300 is impossible (must be in 1..256"),
      std::string::npos);
  // threshold=0 (the default) is A.2's value for the image's size.
  EXPECT_EQ(test::policy_error("headkv:rho=1/4,threshold=0", c), "no error");
  EXPECT_EQ(headkv_default_threshold(24 * 24), 100);  // LlamaGen, Janus-Pro
  EXPECT_EQ(headkv_default_threshold(48 * 49), 300);  // Lumina-mGPT at 768 px
  EXPECT_EQ(headkv_default_threshold(64 * 65), 500);  // Lumina-mGPT at 1024 px
  EXPECT_NE(test::policy_error("headkv:rho=1/4,match_total=maybe", c).find("must be one of true, false"),
            std::string::npos);
  EXPECT_NE(test::policy_error("headkv:rho=1/4,cond_mass=half", c).find("must be one of exclude, free, include"),
            std::string::npos);
  EXPECT_NE(test::policy_error("headkv:rho=0", c).find("rho 0 is impossible"), std::string::npos);
  EXPECT_EQ(test::policy_error("headkv:rho=1/4", c), "no error");
  // Registered, so the CLI, GUI and benchmarks list it.
  EXPECT_NO_THROW(find_policy("headkv"));
  // 1/5 of 256 = 51 -> 3 whole lines.
  auto p = make_policy("headkv:rho=1/5,match_total=false,threshold=40", c);
  EXPECT_EQ(as_headkv(p).rho_budget(), 48);
  EXPECT_EQ(as_headkv(p).local_window(), 32);
  EXPECT_EQ(p->max_entries(), 48);
}

// The papers' rho = 1/8 on a 24x24 grid (LlamaGen at 384 px): B = 72 = 3 lines.
// Global heads keep their 2 recent lines, the second of them the line under way,
// so every line end leaves one line of history for Stratified Token Eviction to
// choose from; local heads keep a 2-line window, less than the global heads.
TEST(HeadKvPolicy, GlobalHeadsKeepHistoryAtOneEighthOnA24x24Grid) {
  PolicyContext c = test::small_policy_context(24, /*rows=*/1, /*cfg=*/false, /*n_head=*/2, /*kv_heads=*/2);
  auto policy = make_policy("headkv:rho=1/8", c);
  auto& headkv = as_headkv(policy);
  ASSERT_EQ(headkv.rho_budget(), 72);
  ASSERT_EQ(headkv.local_window(), 48);
  KvStore store(1, 1, 2, kDim, 1 + policy->max_entries() + 1, at::TensorOptions().dtype(at::kFloat));
  store.append(0, at::zeros({1, 2, 1, kDim}), at::zeros({1, 2, 1, kDim}), {0});
  at::manual_seed(5);
  int64_t peak_local = 0, peak_global = 0, line_ends_with_history = 0;
  for (int64_t i = 0; i < 24 * 24; ++i) {
    // KV head 0: a key along e0 that grows with the position, looked at by a sharp
    // e0 query (the newest tokens: local). KV head 1: random keys and queries (spread
    // attention: global).
    at::Tensor k = at::randn({1, 2, 1, kDim});
    k[0][0].zero_();
    k[0][0][0][0] = 0.05f * static_cast<float>(i);
    store.append(0, k, k, {1 + i});
    if (headkv.grouped(0)) {  // the peak: the new token is in, the line end not yet applied
      peak_local = std::max(peak_local, store.length(0, 0, 0) - 1);
      peak_global = std::max(peak_global, store.length(0, 0, 1) - 1);
    }
    at::Tensor q = at::randn({1, 2, 1, kDim}) * 0.5;
    q[0][0].zero_();
    q[0][0][0][0] = 40.0f;
    policy->observe_queries(0, i, q);
    policy->after_token(store, i);
    if (!headkv.grouped(0)) continue;
    if ((i + 1) % 24 != 0) continue;
    const int64_t local = store.length(0, 0, 0) - 1, global = store.length(0, 0, 1) - 1;
    // A line end: global back to B - n = 48, the finished line and a line's worth of history.
    EXPECT_EQ(global, 48) << "token " << i;
    EXPECT_EQ(local, 24) << "token " << i;
    const int64_t recent_from = 1 + i + 1 - 24;  // the finished line's first position
    int64_t history = 0;
    for (int64_t p : store.positions(0, 0, 1)) history += (p >= 1 && p < recent_from) ? 1 : 0;
    EXPECT_EQ(history, 24) << "token " << i;
    line_ends_with_history += history > 0 ? 1 : 0;
  }
  ASSERT_TRUE(headkv.grouped(0));
  EXPECT_FALSE(headkv.is_global(0, 0, 0));
  EXPECT_TRUE(headkv.is_global(0, 0, 1));
  EXPECT_GT(line_ends_with_history, 15);
  EXPECT_EQ(peak_global, 72);
  EXPECT_EQ(peak_local, 48);
  EXPECT_LT(peak_local, peak_global);
}
