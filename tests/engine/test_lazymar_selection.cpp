// LazyMAR's token-selection strategies (engine/models/mar/lazymar_selection.h, the
// ablation of the paper's §4.4, Table 3, and Figure 6's random cache): on a
// hand-built step exactly which positions each strategy recomputes against the
// default; on a tiny random MAR model every lazy step follows its strategy's rule,
// random is reproducible from the request's seed, and unknown names are refused.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/models/mar/lazymar_policy.h"
#include "engine/models/mar/lazymar_selection.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/masked_generation.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_mar.h"

using namespace kvs;
using namespace kvs::mar;

namespace {

at::Tensor mask_of(const std::vector<int64_t>& positions, int64_t length = 10) {
  at::Tensor m = at::zeros({1, length}, at::kBool);
  for (int64_t p : positions) m[0][p] = true;
  return m;
}

std::vector<int64_t> positions_of(const at::Tensor& mask) {
  std::vector<int64_t> out;
  for (int64_t p = 0; p < mask.size(1); ++p)
    if (mask[0][p].item<bool>()) out.push_back(p);
  return out;
}

// Two buffer positions (0, 1) and eight grid positions (2..9). Positions 2..5 were
// predicted before this step (5 at the previous step), 6 is predicted now, 7..9
// later. Forced: 5 and 6.
LazyMarStepTokens hand_built_step() {
  LazyMarStepTokens t;
  t.buffer = 2;
  t.similarity = at::tensor({0.9f, 0.2f, 0.5f, 0.1f, 0.95f, 0.3f, 0.8f, 0.7f, 0.6f, 0.4f}).reshape({1, 10});
  t.forced = mask_of({5, 6});
  t.unknown = mask_of({6, 7, 8, 9});
  return t;
}

std::vector<int64_t> recomputed(const std::string& name, int64_t count, uint64_t seed = 1) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return positions_of(select_recomputed_tokens(lazymar_selection_named(name), hand_built_step(), count, g));
}

}  // namespace

TEST(LazyMarSelection, EachStrategyRecomputesExactlyItsTokens) {
  // Five recomputed positions: the two forced ones and three ranked among the others
  // (similarities 0:.9 1:.2 2:.5 3:.1 4:.95 7:.7 8:.6 9:.4).
  // V (default): the three least similar are recomputed, the most similar cached.
  EXPECT_EQ(recomputed("max_similarity", 5), (std::vector<int64_t>{1, 3, 5, 6, 9}));
  // IV: the least similar are cached, so the three most similar are recomputed.
  EXPECT_EQ(recomputed("min_similarity", 5), (std::vector<int64_t>{0, 4, 5, 6, 7}));
  // III: the three lowest of uniform draws from the generator, after the forced ones.
  at::Generator g = at::detail::createCPUGenerator(1);
  at::Tensor draws = at::rand({1, 10}, g, at::kFloat);
  draws.masked_fill_(hand_built_step().forced, -1.0f);
  const at::Tensor order = std::get<1>(draws.sort(/*stable=*/true, 1, false));
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 5; ++i) expected.push_back(order[0][i].item<int64_t>());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(recomputed("random", 5), expected);
  EXPECT_EQ(recomputed("random", 5, 7), recomputed("random", 5, 7));
  // II caches only the tokens predicted before the previous step (2, 3, 4): the buffer,
  // the forced and the unpredicted tokens are recomputed, whatever the count.
  EXPECT_EQ(recomputed("predicted", 5), (std::vector<int64_t>{0, 1, 5, 6, 7, 8, 9}));
  EXPECT_EQ(recomputed("predicted", 2), recomputed("predicted", 9));
  // I caches the unpredicted tokens not predicted now (7, 8, 9).
  EXPECT_EQ(recomputed("unpredicted", 5), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  // A count covering every position recomputes everything.
  for (const std::string name : {"max_similarity", "min_similarity", "random"})
    EXPECT_EQ(recomputed(name, 10).size(), 10u) << name;
  EXPECT_FALSE(lazymar_selection_uses_ratio(LazyMarSelection::Predicted));
  EXPECT_TRUE(lazymar_selection_uses_ratio(LazyMarSelection::Random));
}

namespace {

MarConfig tiny_config() { return test::tiny_mar_config(64, 5); }

// Records each step's input and the cache's report.
class Recorder : public MarFeatureCache {
 public:
  explicit Recorder(LazyMarCache& inner) : inner_(inner) {}
  std::vector<std::pair<MarStepInput, LazyMarCache::StepReport>> steps;
  at::Tensor condition(const MarTransformer& t, const MarStepInput& in) override {
    at::Tensor z = inner_.condition(t, in);
    steps.emplace_back(in, inner_.last_step());
    return z;
  }

 private:
  LazyMarCache& inner_;
};

std::vector<std::pair<MarStepInput, LazyMarCache::StepReport>> run(const test::TinyMar& tiny, const std::string& spec,
                                                                   uint64_t seed = 0) {
  auto cache = make_masked_feature_cache(spec, tiny.model.config(), nullptr, seed);
  Recorder rec(*cache);
  MaskedHooks hooks;
  hooks.feature_cache = &rec;
  MaskedParams params;
  params.num_iter = 8;
  params.cfg = 3.0;
  SeededMarRandom rng(3);
  const auto result = generate_masked(tiny.model, at::tensor(std::vector<int64_t>{0, 2}), params, rng, hooks);
  EXPECT_TRUE(at::isfinite(result.tokens).all().item<bool>()) << spec;
  return rec.steps;
}

}  // namespace

TEST(LazyMarSelection, LazyStepsOfATinyModelFollowEachStrategy) {
  test::TinyMar tiny(tiny_config(), 11);
  const MarConfig& c = tiny.model.config();
  const int64_t buffer = c.buffer_size, positions = buffer + c.seq_len();
  const std::string base = "lazymar:start=1,interval=100,retention=constant,ratio=1/2,extra=1,selection=";
  for (const std::string name : {"max_similarity", "min_similarity", "random", "predicted", "unpredicted"}) {
    const auto steps = run(tiny, base + name, 5);
    ASSERT_EQ(steps.size(), 8u);
    for (size_t k = 2; k < steps.size(); ++k) {
      const auto& [in, report] = steps[k];
      ASSERT_FALSE(report.refresh) << name << " " << k;
      const int64_t rows = 2;  // conditional rows (the condition cache is on)
      const at::Tensor none = at::zeros({rows, buffer}, at::kBool);
      const at::Tensor forced =
          at::cat({none, in.to_predict.narrow(0, 0, rows) | in.predicted_before.narrow(0, 0, rows)}, 1);
      const at::Tensor unknown = at::cat({none, in.mask.narrow(0, 0, rows) > 0.5}, 1);
      const at::Tensor is_buffer = at::cat({~none, at::zeros({rows, c.seq_len()}, at::kBool)}, 1);
      const at::Tensor sel = report.selected, sim = report.similarity;
      EXPECT_EQ(report.selected_tokens, sel[0].sum().item<int64_t>()) << name;
      EXPECT_TRUE((sel | ~forced).all().item<bool>()) << name << ": a forced token was cached at step " << k;
      if (name == "predicted") {
        EXPECT_TRUE(at::equal(sel, forced | unknown | is_buffer)) << k;
        continue;
      }
      if (name == "unpredicted") {
        EXPECT_TRUE(at::equal(sel, forced | ~unknown)) << k;
        continue;
      }
      const int64_t forced_count = forced[0].sum().item<int64_t>();
      EXPECT_EQ(report.selected_tokens, std::min(positions, std::max(forced_count + 1, positions / 2))) << name;
      for (int64_t r = 0; r < rows; ++r) {
        const at::Tensor free_sel = sel[r] & ~forced[r], reused = ~sel[r];
        if (!free_sel.any().item<bool>() || !reused.any().item<bool>()) continue;
        if (name == "max_similarity") {
          EXPECT_LE(sim[r].masked_select(free_sel).max().item<float>(),
                    sim[r].masked_select(reused).min().item<float>());
        } else if (name == "min_similarity") {
          EXPECT_GE(sim[r].masked_select(free_sel).min().item<float>(),
                    sim[r].masked_select(reused).max().item<float>());
        }
      }
    }
  }
  // random: the same seed draws the same tokens; another seed others.
  const auto a = run(tiny, base + "random", 5), b = run(tiny, base + "random", 5), d = run(tiny, base + "random", 6);
  bool differs = false;
  for (size_t k = 2; k < a.size(); ++k) {
    EXPECT_TRUE(at::equal(a[k].second.selected, b[k].second.selected)) << k;
    differs = differs || !at::equal(a[k].second.selected, d[k].second.selected);
  }
  EXPECT_TRUE(differs);
}

TEST(LazyMarSelection, UnknownStrategiesAreRefusedByName) {
  const std::string expected =
      "policy lazymar: parameter selection must be one of max_similarity, min_similarity, random, predicted, "
      "unpredicted, got 'best'";
  EXPECT_EQ(test::error_of([] { make_masked_feature_cache("lazymar:selection=best", tiny_config()); }), expected);
  EXPECT_EQ(test::error_of([] { lazymar_selection_named("best"); }), expected);
  // The registry's list is the strategies' own.
  const PolicyParamSpec* param = find_policy("lazymar").find_param("selection");
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(param->choices, lazymar_selection_names());
  EXPECT_EQ(param->default_value, "max_similarity");
}
