// The sampler follows LlamaGen's order (temperature, top-k keeping ties, top-p
// keeping the first token over the threshold) and is reproducible per seed.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/sampling/token_sampler.h"

using namespace kvs;

TEST(Sampler, TopKKeepsTies) {
  at::Tensor logits = at::tensor({1.0f, 3.0f, 2.0f, 3.0f, 0.5f}).view({1, 5});
  at::Tensor f = filter_top_k_top_p(logits, 1, 1.0);
  EXPECT_TRUE(std::isinf(f[0][0].item<float>()));
  EXPECT_EQ(f[0][1].item<float>(), 3.0f);
  EXPECT_EQ(f[0][3].item<float>(), 3.0f);
  EXPECT_TRUE(std::isinf(f[0][2].item<float>()));
}

TEST(Sampler, TopPKeepsTheTokenThatCrossesTheThreshold) {
  // probs 0.5, 0.3, 0.2: with top_p 0.6 the first two survive.
  at::Tensor logits = at::log(at::tensor({0.3f, 0.5f, 0.2f})).view({1, 3});
  at::Tensor f = filter_top_k_top_p(logits, 0, 0.6);
  EXPECT_FALSE(std::isinf(f[0][0].item<float>()));
  EXPECT_FALSE(std::isinf(f[0][1].item<float>()));
  EXPECT_TRUE(std::isinf(f[0][2].item<float>()));
  // A tiny top_p still keeps the best token.
  at::Tensor g = filter_top_k_top_p(logits, 0, 0.01);
  EXPECT_FALSE(std::isinf(g[0][1].item<float>()));
  EXPECT_TRUE(std::isinf(g[0][0].item<float>()));
}

TEST(Sampler, CfgCombinesCondAndUncondHalves) {
  at::Tensor logits = at::tensor({2.0f, 0.0f, 1.0f, 1.0f}).view({2, 2});  // cond row, uncond row
  at::Tensor c = combine_cfg(logits, 4.0);
  EXPECT_FLOAT_EQ(c[0][0].item<float>(), 1.0f + (2.0f - 1.0f) * 4.0f);
  EXPECT_FLOAT_EQ(c[0][1].item<float>(), 1.0f + (0.0f - 1.0f) * 4.0f);
}

TEST(Sampler, SeededSamplingIsReproducibleAndFollowsTheDistribution) {
  at::Tensor logits = at::log(at::tensor({0.7f, 0.2f, 0.1f})).view({1, 3}).expand({4000, 3}).contiguous();
  SamplingParams p;
  TokenSampler a(5), b(5), c(6);
  at::Tensor ta = a.sample(logits, p), tb = b.sample(logits, p), tc = c.sample(logits, p);
  EXPECT_TRUE(at::equal(ta, tb));
  EXPECT_FALSE(at::equal(ta, tc));
  const double frac0 = (ta == 0).to(at::kDouble).mean().item<double>();
  EXPECT_NEAR(frac0, 0.7, 0.03);
}

TEST(Sampler, TemperatureZeroIsGreedyAndGreedyModeIgnoresRng) {
  at::Tensor logits = at::tensor({0.1f, 0.2f, 0.15f}).view({1, 3});
  SamplingParams p;
  p.temperature = 0.0;  // clamped to 1e-5 as upstream -> effectively arg-max
  TokenSampler s(1);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(logits, p).item<int64_t>(), 1);
  p.temperature = 1.0;
  p.sample = false;
  EXPECT_EQ(s.sample(logits, p).item<int64_t>(), 1);
}

TEST(Sampler, InvalidParametersAreRejected) {
  SamplingParams p;
  p.top_k = -1;
  EXPECT_THROW(p.validate(), InvalidArgumentError);
  p = SamplingParams{};
  p.top_p = 1.5;
  EXPECT_THROW(p.validate(), InvalidArgumentError);
  p = SamplingParams{};
  p.temperature = -0.5;
  EXPECT_THROW(p.validate(), InvalidArgumentError);
}
