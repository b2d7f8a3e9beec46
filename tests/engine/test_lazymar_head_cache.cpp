// LazyMAR's diffusion-head cache (engine/models/mar/lazymar_head_cache.h) on a
// tiny random MAR model whose head has 6 blocks (as MAR-B's), so that block 0,
// the residual-reuse blocks 1-4 and block 5 all exist: full steps are the exact
// head bit for bit; cached steps follow the official rule, written out here from
// the head's pieces (stored MLP branches, residual updates and CFG difference,
// the warm-up above 0.9·T); the counted FLOPs match a hand count; head_threshold=1
// is the exact computation end to end; with the cache on, a generation counts
// exactly the saved head work and stays close to the full computation.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/core/errors.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/lazymar_head_cache.h"
#include "engine/models/mar/lazymar_policy.h"
#include "engine/models/mar/mar_flops.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/masked_generation.h"
#include "tests/engine/tiny_mar.h"

using namespace kvs;
using namespace kvs::mar;

namespace {

// 6 head blocks and 40 reverse steps: full steps 39, 35, 28, 21, 14, 7, 0; warm-up t > 36.
MarConfig head_config() {
  MarConfig c = test::tiny_mar_config(64, 5);
  c.diffloss_d = 6;
  c.num_sampling_steps = "40";
  return c;
}

struct TinyHeadMar : test::TinyMar {
  TinyHeadMar() : test::TinyMar(head_config(), 17) {}
};

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
  at::manual_seed(seed);
  return at::randn(shape);
}

// The official cached step, written out from the head's pieces: `stored_branch` /
// `stored_residual` per block, `diff` = cond_eps - uncond_eps of the last full step.
at::Tensor reference_cached_step(const DiffusionHead& head, const at::Tensor& x, const at::Tensor& t,
                                 const at::Tensor& z, double cfg, const std::vector<at::Tensor>& stored_branch,
                                 const std::vector<at::Tensor>& stored_residual, const at::Tensor& diff, bool warm_up) {
  const int64_t n = x.size(0) / 2, c = head.in_channels();
  at::Tensor h = head.input(x.narrow(0, 0, n));
  const at::Tensor y = head.condition(t.narrow(0, 0, n), z.narrow(0, 0, n));
  for (int64_t i = 0; i < head.depth(); ++i) {
    if (i >= 1 && i <= 4) {
      h = h + stored_residual[static_cast<size_t>(i)].narrow(0, 0, n);
    } else {
      const auto m = head.modulation(i, y);
      const at::Tensor branch = warm_up ? head.mlp_branch(i, h, m)
                                        : stored_branch[static_cast<size_t>(i)].narrow(0, 0, n);
      h = h + m.gate * branch;
    }
  }
  const at::Tensor out = head.final_layer(h, y);
  const at::Tensor cond = out.narrow(1, 0, c), rest = out.narrow(1, c, c);
  const at::Tensor uncond = cond - diff;
  const at::Tensor eps = uncond + (cond - uncond) * cfg;
  return at::cat({at::cat({eps, eps}, 0), at::cat({rest, rest}, 0)}, 1);
}

// The stored values of a full step on x (both halves = x's conditional half).
struct FullStepStore {
  std::vector<at::Tensor> branch, residual;
  at::Tensor diff;
};
FullStepStore store_of_full_step(const DiffusionHead& head, const at::Tensor& x, const at::Tensor& t,
                                 const at::Tensor& z) {
  const int64_t n = x.size(0) / 2, c = head.in_channels();
  const at::Tensor half = x.narrow(0, 0, n);
  FullStepStore s;
  at::Tensor h = head.input(at::cat({half, half}, 0));
  const at::Tensor y = head.condition(t, z);
  for (int64_t i = 0; i < head.depth(); ++i) {
    const auto m = head.modulation(i, y);
    s.branch.push_back(head.mlp_branch(i, h, m));
    const at::Tensor out = head.res_block(i, h, y);
    s.residual.push_back(out - h);
    h = out;
  }
  const at::Tensor eps = head.final_layer(h, y).narrow(1, 0, c);
  s.diff = eps.narrow(0, 0, n) - eps.narrow(0, n, n);
  return s;
}

double max_abs(const at::Tensor& a) { return a.abs().max().item<double>(); }

}  // namespace

TEST(LazyMarHeadCache, StepsFollowTheOfficialRule) {
  EXPECT_TRUE(LazyMarHeadCache::is_full_step(39, 40, 7));
  EXPECT_TRUE(LazyMarHeadCache::is_full_step(35, 40, 7));
  EXPECT_TRUE(LazyMarHeadCache::is_full_step(0, 40, 7));
  EXPECT_FALSE(LazyMarHeadCache::is_full_step(38, 40, 7));
  EXPECT_FALSE(LazyMarHeadCache::is_full_step(34, 40, 7));
  EXPECT_TRUE(LazyMarHeadCache::is_warm_up(37, 40));   // 37 > 36
  EXPECT_FALSE(LazyMarHeadCache::is_warm_up(36, 40));  // 36 > 36.0 is false, as in Python
  EXPECT_FALSE(LazyMarHeadCache::reuses_residual(0));
  EXPECT_TRUE(LazyMarHeadCache::reuses_residual(1));
  EXPECT_TRUE(LazyMarHeadCache::reuses_residual(4));
  EXPECT_FALSE(LazyMarHeadCache::reuses_residual(5));

  TinyHeadMar tiny;
  const DiffusionHead& head = *tiny.model.head;
  const MarConfig& config = tiny.model.config();
  ASSERT_EQ(head.depth(), 6);
  const int64_t n = 3, T = 40, c = head.in_channels();
  const double cfg = 2.5;
  const at::Tensor z = randn({2 * n, config.decoder_embed_dim}, 1);
  MarFlopCounter flops;
  LazyMarHeadCache cache(head, config, T, 7, z, cfg, &flops);
  FullStepStore store;
  int64_t full = 0, cached = 0;
  for (int64_t t = T - 1; t >= 0; --t) {
    const at::Tensor x = randn({2 * n, c}, 100 + static_cast<uint64_t>(t));
    const at::Tensor original = at::full({2 * n}, t * 25, at::kLong);
    const double before = flops.total;
    const at::Tensor out = cache(x, t, original);
    const double counted = flops.total - before;
    const bool warm = t > 36;
    if (t == 39 || t % 7 == 0) {
      ++full;
      // Bit for bit the exact head (forward_with_cfg), and the full head's FLOPs on both halves.
      EXPECT_TRUE(at::equal(out, head.forward_with_cfg(x, original, z, cfg))) << "t " << t;
      EXPECT_EQ(counted, MarFlops::head_forward(config, 2 * n)) << "t " << t;
      store = store_of_full_step(head, x, original, z);
    } else {
      ++cached;
      const at::Tensor expected = reference_cached_step(head, x, original, z, cfg, store.branch, store.residual,
                                                        store.diff, warm);
      EXPECT_LT(max_abs(out - expected), 1e-5) << "t " << t;
      // The cache is real: the output is not the exact head's.
      EXPECT_GT(max_abs(out - head.forward_with_cfg(x, original, z, cfg)), 1e-4) << "t " << t;
      // Conditional rows only: condition, input, final layer; adaLN of blocks 0 and 5
      // (their MLPs too in the warm-up); blocks 1-4 run nothing.
      const int64_t w = config.diffloss_w;
      const double blocks = warm ? 2 * MarFlops::head_res_block(config, n) : 2 * MarFlops::linear(n, w, 3 * w);
      EXPECT_EQ(counted, MarFlops::head_condition(config, n) + MarFlops::head_input(config, n) + blocks +
                             MarFlops::head_final(config, n))
          << "t " << t;
      if (warm) {
        // The warm-up stores the recomputed branches (conditional rows) for the next cached steps.
        const at::Tensor h0 = head.input(x.narrow(0, 0, n));
        const at::Tensor y = head.condition(original.narrow(0, 0, n), z.narrow(0, 0, n));
        store.branch[0] = head.mlp_branch(0, h0, head.modulation(0, y));
        at::Tensor h = h0 + head.modulation(0, y).gate * store.branch[0];
        for (int64_t i = 1; i <= 4; ++i) h = h + store.residual[static_cast<size_t>(i)].narrow(0, 0, n);
        store.branch[5] = head.mlp_branch(5, h, head.modulation(5, y));
      }
    }
  }
  EXPECT_EQ(cache.full_steps(), 7);
  EXPECT_EQ(cache.cached_steps(), 33);
  EXPECT_EQ(full, 7);
  EXPECT_EQ(cached, 33);
}

TEST(LazyMarHeadCache, WithoutGuidanceTheBlockCacheRunsOnEveryRow) {
  TinyHeadMar tiny;
  const DiffusionHead& head = *tiny.model.head;
  const MarConfig& config = tiny.model.config();
  const int64_t n = 4, c = head.in_channels();
  const at::Tensor z = randn({n, config.decoder_embed_dim}, 2);
  MarFlopCounter flops;
  LazyMarHeadCache cache(head, config, 10, 7, z, 1.0, &flops);
  // t = 9 (full), then t = 8 (cached; 8 > 9.0 is false: no warm-up).
  const at::Tensor x9 = randn({n, c}, 3), x8 = randn({n, c}, 4);
  const at::Tensor t9 = at::full({n}, 900, at::kLong), t8 = at::full({n}, 800, at::kLong);
  EXPECT_TRUE(at::equal(cache(x9, 9, t9), head.forward(x9, t9, z)));
  std::vector<at::Tensor> branch, residual;
  at::Tensor h = head.input(x9);
  const at::Tensor y9 = head.condition(t9, z);
  for (int64_t i = 0; i < head.depth(); ++i) {
    branch.push_back(head.mlp_branch(i, h, head.modulation(i, y9)));
    const at::Tensor out = head.res_block(i, h, y9);
    residual.push_back(out - h);
    h = out;
  }
  const double before = flops.total;
  const at::Tensor out = cache(x8, 8, t8);
  at::Tensor e = head.input(x8);
  const at::Tensor y8 = head.condition(t8, z);
  for (int64_t i = 0; i < head.depth(); ++i)
    e = (i >= 1 && i <= 4) ? e + residual[static_cast<size_t>(i)]
                           : e + head.modulation(i, y8).gate * branch[static_cast<size_t>(i)];
  EXPECT_LT(max_abs(out - head.final_layer(e, y8)), 1e-5);
  EXPECT_EQ(out.size(0), n);  // every row ran (no CFG difference to reuse)
  const int64_t w = config.diffloss_w;
  EXPECT_EQ(flops.total - before, MarFlops::head_condition(config, n) + MarFlops::head_input(config, n) +
                                      2 * MarFlops::linear(n, w, 3 * w) + MarFlops::head_final(config, n));
}

TEST(LazyMarHeadCache, OutOfOrderStepsAndBadThresholdsAreRefused) {
  TinyHeadMar tiny;
  const DiffusionHead& head = *tiny.model.head;
  const at::Tensor z = randn({2, tiny.model.config().decoder_embed_dim}, 5);
  const at::Tensor x = randn({2, head.in_channels()}, 6), t = at::full({2}, 10, at::kLong);
  LazyMarHeadCache cache(head, tiny.model.config(), 10, 7, z, 3.0, nullptr);
  try {
    cache(x, 5, t);  // the loop must start at T-1 = 9
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("reverse step 5 came out of order (expected 9"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(LazyMarHeadCache(head, tiny.model.config(), 10, 0, z, 3.0, nullptr), InvalidArgumentError);
}

TEST(LazyMarHeadCache, ThresholdOneIsTheExactComputation) {
  TinyHeadMar tiny;
  const at::Tensor labels = at::tensor(std::vector<int64_t>{1, 3});
  for (double cfg : {3.0, 1.0}) {
    MaskedParams p;
    p.num_iter = 6;
    p.cfg = cfg;
    SeededMarRandom r1(5), r2(5);
    const auto full = generate_masked(tiny.model, labels, p, r1);
    auto cache = make_masked_feature_cache("lazymar:start=0,interval=1,head_cache=on,head_threshold=1",
                                           tiny.model.config());
    MaskedHooks hooks;
    hooks.feature_cache = cache.get();
    EXPECT_TRUE(at::equal(full.tokens, generate_masked(tiny.model, labels, p, r2, hooks).tokens)) << "cfg " << cfg;
  }
}

TEST(LazyMarHeadCache, GenerationCountsTheSavedHeadWorkAndStaysClose) {
  TinyHeadMar tiny;
  const MarConfig& config = tiny.model.config();
  const at::Tensor labels = at::tensor(std::vector<int64_t>{0, 2, 4});
  MaskedParams p;
  p.num_iter = 8;
  p.cfg = 3.0;
  auto run = [&](const std::string& spec, double* flops) {
    MarFlopCounter counter;
    auto cache = make_masked_feature_cache(spec, config, &counter);
    MaskedHooks hooks;
    hooks.feature_cache = cache.get();
    hooks.flops = &counter;
    SeededMarRandom rng(9);
    MaskedResult r = generate_masked(tiny.model, labels, p, rng, hooks);
    *flops = counter.total;
    return r;
  };
  double plain = 0, cached = 0;
  // The token and condition caches off: the head cache alone.
  const MaskedResult a = run("lazymar:token_cache=off,condition_cache=off", &plain);
  const MaskedResult b = run("lazymar:token_cache=off,condition_cache=off,head_cache=on", &cached);
  // Per MAR step predicting k tokens per image (n = 3k conditional rows): 33 of the 40
  // reverse steps are cached; 2 of them (t = 37, 38) are in the warm-up.
  double saved = 0;
  const int64_t w = config.diffloss_w;
  for (int64_t k : a.predicted_per_step) {
    const int64_t n = 3 * k;
    const double light = MarFlops::head_condition(config, n) + MarFlops::head_input(config, n) +
                         MarFlops::head_final(config, n);
    saved += 31 * (MarFlops::head_forward(config, 2 * n) - light - 2 * MarFlops::linear(n, w, 3 * w));
    saved += 2 * (MarFlops::head_forward(config, 2 * n) - light - 2 * MarFlops::head_res_block(config, n));
  }
  EXPECT_DOUBLE_EQ(plain - cached, saved);
  EXPECT_TRUE(at::isfinite(b.tokens).all().item<bool>());
  EXPECT_FALSE(at::equal(a.tokens, b.tokens));
  // Close to the exact head: the same orders, tokens within the spread of the exact ones.
  EXPECT_TRUE(at::equal(a.orders, b.orders));
  const double spread = a.tokens.std().item<double>();
  EXPECT_LT((a.tokens - b.tokens).pow(2).mean().sqrt().item<double>(), spread);
}
