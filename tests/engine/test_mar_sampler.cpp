// MAR's schedules against hand-computed values: the cosine mask schedule and the
// linear/constant guidance of sample_tokens, space_timesteps respacing, the
// cosine beta schedule and the respaced coefficients, the [cos, sin] timestep
// embedding, and p_sample's learned-range arithmetic on a hand-made model.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/masked_generation.h"

using namespace kvs;
using namespace kvs::mar;

TEST(MarSchedule, CosineMaskLengths) {
  // seq_len 256, 4 steps (the conformance run: 20, 55, 84 and 97 tokens predicted per image).
  int64_t unknown = 256;
  std::vector<int64_t> lens;
  for (int64_t step = 0; step < 4; ++step) {
    const int64_t len = mask_len_after_step(step, 4, 256, unknown);
    lens.push_back(len);
    unknown = len;
  }
  // floor(256 cos(pi/8)) = 236, floor(256 cos(pi/4)) = 181, floor(256 cos(3pi/8)) = 97, cos(pi/2) -> clamped to 1.
  EXPECT_EQ(lens, (std::vector<int64_t>{236, 181, 97, 1}));
  // At least one token is predicted per step while more than one is unknown, at least one stays unknown.
  EXPECT_EQ(mask_len_after_step(0, 1000, 256, 256), 255);
  EXPECT_EQ(mask_len_after_step(5, 1000, 256, 3), 2);
  EXPECT_EQ(mask_len_after_step(999, 1000, 256, 1), 1);
  // 64 steps (the official fast setting): step 0 keeps floor(256 cos(pi/128)) = 255 unknown.
  EXPECT_EQ(mask_len_after_step(0, 64, 256, 256), 255);
  EXPECT_EQ(mask_len_after_step(31, 64, 256, 256), 181);
}

TEST(MarSchedule, GuidanceSchedules) {
  // 1 + (3 - 1) * (256 - mask_len) / 256 for the mask lengths above (the case's cfg_iter values).
  EXPECT_FLOAT_EQ(cfg_for_step(3.0, "linear", 236, 256), 1.15625f);
  EXPECT_FLOAT_EQ(cfg_for_step(3.0, "linear", 181, 256), 1.5859375f);
  EXPECT_FLOAT_EQ(cfg_for_step(3.0, "linear", 97, 256), 2.2421875f);
  EXPECT_FLOAT_EQ(cfg_for_step(3.0, "linear", 1, 256), 2.9921875f);
  EXPECT_FLOAT_EQ(cfg_for_step(2.9, "constant", 100, 256), 2.9f);
  EXPECT_FLOAT_EQ(cfg_for_step(1.0, "linear", 100, 256), 1.0f);
  EXPECT_THROW(cfg_for_step(3.0, "cosine", 1, 256), InvalidArgumentError);
  MaskedParams p;
  p.cfg_schedule = "cosine";
  EXPECT_THROW(p.validate(), InvalidArgumentError);
}

TEST(MarDiffusion, SpaceTimesteps) {
  // respace.py: the case's derived gen_diffusion_timestep_map for '40'.
  const std::vector<int64_t> forty = {0,   26,  51,  77,  102, 128, 154, 179, 205, 231, 256, 282, 307, 333,
                                      359, 384, 410, 435, 461, 487, 512, 538, 564, 589, 615, 640, 666, 692,
                                      717, 743, 768, 794, 820, 845, 871, 897, 922, 948, 973, 999};
  EXPECT_EQ(space_timesteps(1000, "40"), forty);
  const auto hundred = space_timesteps(1000, "100");
  ASSERT_EQ(hundred.size(), 100u);
  // stride 999/99 = 10.0909..: round(k * stride) with Python's round, e.g. k = 6 -> 60.545 -> 61.
  EXPECT_EQ(std::vector<int64_t>(hundred.begin(), hundred.begin() + 8),
            (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 61, 71}));
  EXPECT_EQ(hundred.back(), 999);
  // Sections: 10 steps over the first 500, 5 over the last 500.
  EXPECT_EQ(space_timesteps(1000, "10,5"),
            (std::vector<int64_t>{0, 55, 111, 166, 222, 277, 333, 388, 444, 499, 500, 625, 750, 874, 999}));
  // (249.5 rounds to the even 250, as Python's round does.)
  EXPECT_EQ(space_timesteps(4, "4").size(), 4u);
  const auto ddim = space_timesteps(1000, "ddim25");
  ASSERT_EQ(ddim.size(), 25u);
  EXPECT_EQ(ddim[1], 40);
  EXPECT_EQ(space_timesteps(1000, "1000").size(), 1000u);
  EXPECT_THROW(space_timesteps(1000, "1001"), InvalidArgumentError);
  EXPECT_THROW(space_timesteps(1000, "ddim999"), InvalidArgumentError);
  EXPECT_THROW(space_timesteps(1000, "abc"), InvalidArgumentError);
  EXPECT_THROW(GaussianDiffusion("1"), InvalidArgumentError);
}

TEST(MarDiffusion, CosineScheduleAndRespacing) {
  const auto betas = cosine_betas(1000);
  ASSERT_EQ(betas.size(), 1000u);
  auto alpha_bar = [](double t) { return std::pow(std::cos((t + 0.008) / 1.008 * 3.141592653589793 / 2), 2.0); };
  EXPECT_DOUBLE_EQ(betas[0], 1 - alpha_bar(0.001) / alpha_bar(0.0));
  EXPECT_DOUBLE_EQ(betas[500], 1 - alpha_bar(0.501) / alpha_bar(0.5));
  EXPECT_DOUBLE_EQ(betas[999], 0.999);  // clipped at max_beta
  // The respaced process keeps the base cumulative products at the kept steps:
  // alphas_cumprod[last] = prod(1 - beta) over all 1000 steps = 2.4e-9 (README).
  const GaussianDiffusion d("40");
  EXPECT_EQ(d.num_timesteps(), 40);
  double full = 1.0;
  for (double b : betas) full *= 1 - b;
  EXPECT_NEAR(d.alphas_cumprod().back() / full, 1.0, 1e-9);
  EXPECT_NEAR(d.alphas_cumprod().back(), 2.4e-9, 0.05e-9);
  // The first respaced beta is the base beta 0, the second spans 26 base steps.
  EXPECT_DOUBLE_EQ(d.betas()[0], betas[0]);
  double prod = 1.0;
  for (int i = 0; i <= 26; ++i) prod *= 1 - betas[static_cast<size_t>(i)];
  EXPECT_NEAR(d.betas()[1], 1 - prod / (1 - betas[0]), 1e-15);
  // log(append(posterior_variance[1], posterior_variance[1:])): entries 0 and 1 are equal.
  EXPECT_DOUBLE_EQ(d.posterior_log_variance_clipped()[0], d.posterior_log_variance_clipped()[1]);
}

TEST(MarDiffusion, TimestepEmbeddingIsCosThenSin) {
  at::Tensor t = at::tensor(std::vector<int64_t>{0, 1, 999});
  at::Tensor e = DiffusionHead::timestep_embedding(t, 256);
  ASSERT_EQ(e.sizes(), (std::vector<int64_t>{3, 256}));
  // t = 0: cos(0) = 1 in the first half, sin(0) = 0 in the second.
  EXPECT_TRUE(at::equal(e[0].narrow(0, 0, 128), at::ones({128})));
  EXPECT_TRUE(at::equal(e[0].narrow(0, 128, 128), at::zeros({128})));
  // t = 1, frequency index 0 (freq 1): cos(1) then, 128 columns later, sin(1).
  EXPECT_NEAR(e[1][0].item<float>(), std::cos(1.0), 1e-6);
  EXPECT_NEAR(e[1][128].item<float>(), std::sin(1.0), 1e-6);
  // Index i has frequency exp(-ln(10000) * i / 128).
  const double f5 = std::exp(-std::log(10000.0) * 5 / 128);
  EXPECT_NEAR(e[2][5].item<float>(), std::cos(999 * f5), 2e-4);
  EXPECT_NEAR(e[2][133].item<float>(), std::sin(999 * f5), 2e-4);
  // Odd widths get a zero column.
  EXPECT_EQ(DiffusionHead::timestep_embedding(t, 7).size(1), 7);
}

TEST(MarDiffusion, LearnedRangeStepByHand) {
  const GaussianDiffusion d("10");
  const int64_t t = 4;
  // A model that predicts eps = 0.5 and variance value v = 0 (halfway between the two log-variances).
  int64_t seen_original = -1;
  GaussianDiffusion::ModelFn model = [&](const at::Tensor& x, int64_t, const at::Tensor& original_t) {
    seen_original = original_t[0].item<int64_t>();
    return at::cat({at::full_like(x, 0.5), at::zeros_like(x)}, 1);
  };
  const at::Tensor x = at::full({2, 3}, 2.0);
  const at::Tensor noise = at::full({2, 3}, 1.0);
  const auto step = d.p_sample(model, x, t, noise, 0.5);
  EXPECT_EQ(seen_original, d.timestep_map()[static_cast<size_t>(t)]);  // the model gets the original id
  const double ac = d.alphas_cumprod()[t], acp = d.alphas_cumprod()[t - 1], beta = d.betas()[t];
  const double x0 = std::sqrt(1 / ac) * 2.0 - std::sqrt(1 / ac - 1) * 0.5;
  const double mean = beta * std::sqrt(acp) / (1 - ac) * x0 + (1 - acp) * std::sqrt(1 - beta) / (1 - ac) * 2.0;
  const double log_var = 0.5 * std::log(beta) + 0.5 * d.posterior_log_variance_clipped()[t];
  EXPECT_NEAR(step.pred_xstart[0][0].item<float>(), x0, 1e-5 * std::abs(x0));
  EXPECT_NEAR(step.sample[1][2].item<float>(), mean + std::exp(0.5 * log_var) * 1.0 * 0.5, 1e-5);
  // No noise at t = 0.
  const auto last = d.p_sample(model, x, 0, noise, 1.0);
  const auto again = d.p_sample(model, x, 0, noise * 7, 1.0);
  EXPECT_TRUE(at::equal(last.sample, again.sample));
}

TEST(MarRandom, SeededAndReplayed) {
  SeededMarRandom a(11), b(11), c(12);
  const at::Tensor oa = a.orders(3, 16);
  EXPECT_TRUE(at::equal(oa, b.orders(3, 16)));
  EXPECT_FALSE(at::equal(oa, c.orders(3, 16)));
  EXPECT_TRUE(at::equal(std::get<0>(oa.sort(1)), at::arange(16).expand({3, 16})));  // permutations
  EXPECT_TRUE(at::equal(a.normal({4, 2}), b.normal({4, 2})));

  ReplayMarRandom r(at::arange(8).reshape({1, 8}), {at::ones({2, 3}), at::full({4, 3}, 2.0)});
  EXPECT_TRUE(at::equal(r.orders(1, 8), at::arange(8).reshape({1, 8})));
  EXPECT_THROW(r.orders(1, 8), InvalidArgumentError);
  // A recorded draw with fewer rows (the conditional CFG half) is padded with zero rows.
  const at::Tensor padded = r.normal({4, 3});
  EXPECT_TRUE(at::equal(padded.narrow(0, 0, 2), at::ones({2, 3})));
  EXPECT_TRUE(at::equal(padded.narrow(0, 2, 2), at::zeros({2, 3})));
  EXPECT_THROW(r.normal({4, 2}), InvalidArgumentError);  // wrong width
  EXPECT_EQ(r.draws_used(), 1);
  EXPECT_TRUE(at::equal(r.normal({4, 3}), at::full({4, 3}, 2.0)));
  EXPECT_THROW(r.normal({1, 3}), InvalidArgumentError);  // nothing left
  ReplayMarRandom wrong(at::arange(8).reshape({1, 8}), {});
  EXPECT_THROW(wrong.orders(2, 8), InvalidArgumentError);
}
