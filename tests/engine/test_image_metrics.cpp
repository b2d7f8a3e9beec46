// Image metrics on synthetic images with known values (engine/metrics/image_metrics.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/errors.h"
#include "engine/metrics/image_metrics.h"
#include "engine/metrics/process_memory.h"

namespace kvs {
namespace {

RgbImage gradient(int w, int h) {
  RgbImage img{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        img.pixels[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>((x * 4 + y * 2 + c * 40) % 256);
  return img;
}

RgbImage uniform(int w, int h, uint8_t v) {
  return RgbImage{w, h, std::vector<uint8_t>(static_cast<size_t>(w) * h * 3, v)};
}

RgbImage with_noise(const RgbImage& img, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  RgbImage out = img;
  for (auto& p : out.pixels) p = static_cast<uint8_t>(std::clamp(std::lround(p + noise(rng)), 0L, 255L));
  return out;
}

TEST(ImageMetrics, IdenticalImagesHaveInfinitePsnrAndUnitSsim) {
  const RgbImage a = gradient(64, 48);
  EXPECT_EQ(mean_squared_error(a, a), 0.0);
  EXPECT_TRUE(std::isinf(psnr(a, a)));
  EXPECT_GT(psnr(a, a), 0);
  EXPECT_DOUBLE_EQ(ssim(a, a), 1.0);
}

TEST(ImageMetrics, KnownMseGivesExactPsnr) {
  // Every sample differs by 10: MSE 100, PSNR = 10 log10(255^2 / 100) = 28.1308 dB.
  const RgbImage a = uniform(32, 32, 100), b = uniform(32, 32, 110);
  EXPECT_DOUBLE_EQ(mean_squared_error(a, b), 100.0);
  EXPECT_NEAR(psnr(a, b), 10.0 * std::log10(65025.0 / 100.0), 1e-12);
  EXPECT_NEAR(psnr(a, b), 28.1308, 1e-4);
  // Half the samples differ by 16 -> MSE 128.
  RgbImage c = a;
  for (size_t i = 0; i < c.pixels.size(); i += 2) c.pixels[i] = 116;
  EXPECT_DOUBLE_EQ(mean_squared_error(a, c), 128.0);
  EXPECT_NEAR(psnr(a, c), 10.0 * std::log10(65025.0 / 128.0), 1e-12);
}

TEST(ImageMetrics, SsimOfConstantImagesFollowsTheLuminanceTerm) {
  // No variance: SSIM reduces to (2 mu_x mu_y + C1) / (mu_x^2 + mu_y^2 + C1).
  const RgbImage a = uniform(32, 32, 100), b = uniform(32, 32, 110);
  const double c1 = (0.01 * 255) * (0.01 * 255);
  EXPECT_NEAR(ssim(a, b), (2 * 100.0 * 110.0 + c1) / (100.0 * 100.0 + 110.0 * 110.0 + c1), 1e-9);
}

TEST(ImageMetrics, SsimAndPsnrDecreaseWithNoise) {
  const RgbImage a = gradient(64, 64);
  double last_ssim = 1.0, last_psnr = INFINITY;
  for (double sigma : {2.0, 8.0, 24.0, 64.0}) {
    const RgbImage b = with_noise(a, sigma, 7);
    const double s = ssim(a, b), p = psnr(a, b);
    EXPECT_LT(s, last_ssim) << "sigma " << sigma;
    EXPECT_LT(p, last_psnr) << "sigma " << sigma;
    EXPECT_GT(s, -1.0);
    last_ssim = s;
    last_psnr = p;
  }
  EXPECT_LT(last_ssim, 0.5);
}

TEST(ImageMetrics, SsimIsSymmetricAndWorksOnTinyImages) {
  const RgbImage a = gradient(64, 64), b = with_noise(a, 10.0, 3);
  EXPECT_NEAR(ssim(a, b), ssim(b, a), 1e-12);
  const RgbImage t = gradient(5, 4);
  EXPECT_DOUBLE_EQ(ssim(t, t), 1.0);
  EXPECT_LT(ssim(t, with_noise(t, 30.0, 1)), 1.0);
}

TEST(ImageMetrics, SizeMismatchIsAnError) {
  EXPECT_THROW(psnr(gradient(8, 8), gradient(8, 9)), InvalidArgumentError);
  EXPECT_THROW(ssim(gradient(8, 8), gradient(9, 8)), InvalidArgumentError);
}

TEST(ImageMetrics, TokenAgreementIsTheFractionOfEqualIds) {
  EXPECT_DOUBLE_EQ(token_agreement({1, 2, 3, 4}, {1, 2, 3, 4}), 1.0);
  EXPECT_DOUBLE_EQ(token_agreement({1, 2, 3, 4}, {1, 0, 3, 0}), 0.5);
  EXPECT_DOUBLE_EQ(token_agreement({1, 2, 3, 4}, {4, 3, 2, 1}), 0.0);
  EXPECT_DOUBLE_EQ(token_agreement({}, {}), 1.0);
  EXPECT_THROW(token_agreement({1}, {1, 2}), InvalidArgumentError);
}

TEST(ProcessMetrics, ResidentMemoryIsReported) {
  const int64_t rss = process_resident_bytes(), peak = process_peak_resident_bytes();
  EXPECT_GT(rss, 0);
  EXPECT_GE(peak, rss);
}

}  // namespace
}  // namespace kvs
