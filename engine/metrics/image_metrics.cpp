#include "engine/metrics/image_metrics.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "engine/core/errors.h"

namespace kvs {
namespace {

void check_same_size(const RgbImage& a, const RgbImage& b, const char* metric) {
  const auto expected = static_cast<size_t>(a.width) * static_cast<size_t>(a.height) * 3;
  if (a.width != b.width || a.height != b.height)
    throw InvalidArgumentError(std::string(metric) + ": images differ in size (" + std::to_string(a.width) + "x" +
                               std::to_string(a.height) + " vs " + std::to_string(b.width) + "x" +
                               std::to_string(b.height) + ")");
  if (a.pixels.size() != expected || b.pixels.size() != expected)
    throw InvalidArgumentError(std::string(metric) + ": pixel buffer does not hold width x height x 3 bytes");
  if (a.width <= 0 || a.height <= 0) throw InvalidArgumentError(std::string(metric) + ": empty image");
}

// One channel of an interleaved RGB image as a CV_64F matrix.
cv::Mat channel_as_double(const RgbImage& image, int channel) {
  const cv::Mat rgb(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.pixels.data()));
  cv::Mat plane, out;
  cv::extractChannel(rgb, plane, channel);
  plane.convertTo(out, CV_64F);
  return out;
}

cv::Mat gaussian(const cv::Mat& m) {
  cv::Mat out;
  cv::GaussianBlur(m, out, cv::Size(11, 11), 1.5, 1.5, cv::BORDER_REFLECT);
  return out;
}

double ssim_channel(const cv::Mat& x, const cv::Mat& y) {
  constexpr double L = 255.0;
  constexpr double C1 = (0.01 * L) * (0.01 * L);
  constexpr double C2 = (0.03 * L) * (0.03 * L);
  const cv::Mat mu_x = gaussian(x), mu_y = gaussian(y);
  const cv::Mat mu_x2 = mu_x.mul(mu_x), mu_y2 = mu_y.mul(mu_y), mu_xy = mu_x.mul(mu_y);
  const cv::Mat sigma_x2 = gaussian(x.mul(x)) - mu_x2;
  const cv::Mat sigma_y2 = gaussian(y.mul(y)) - mu_y2;
  const cv::Mat sigma_xy = gaussian(x.mul(y)) - mu_xy;
  const cv::Mat numerator = (2 * mu_xy + C1).mul(2 * sigma_xy + C2);
  const cv::Mat denominator = (mu_x2 + mu_y2 + C1).mul(sigma_x2 + sigma_y2 + C2);
  cv::Mat map;
  cv::divide(numerator, denominator, map);
  constexpr int r = 5;  // window radius: 'valid' region as in the reference code
  if (map.rows >= 2 * r + 1 && map.cols >= 2 * r + 1) map = map(cv::Rect(r, r, map.cols - 2 * r, map.rows - 2 * r));
  return cv::mean(map)[0];
}

}  // namespace

double mean_squared_error(const RgbImage& a, const RgbImage& b) {
  check_same_size(a, b, "MSE");
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) {
    const double d = static_cast<double>(a.pixels[i]) - static_cast<double>(b.pixels[i]);
    sum += d * d;
  }
  return sum / static_cast<double>(a.pixels.size());
}

double psnr(const RgbImage& a, const RgbImage& b) {
  check_same_size(a, b, "PSNR");
  const double mse = mean_squared_error(a, b);
  if (mse == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

double ssim(const RgbImage& a, const RgbImage& b) {
  check_same_size(a, b, "SSIM");
  // Exactly 1 for identical images (the formula gives 1 up to rounding).
  if (a.pixels == b.pixels) return 1.0;
  double sum = 0;
  for (int c = 0; c < 3; ++c) sum += ssim_channel(channel_as_double(a, c), channel_as_double(b, c));
  return sum / 3.0;
}

double token_agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  if (a.size() != b.size())
    throw InvalidArgumentError("token agreement: sequences differ in length (" + std::to_string(a.size()) + " vs " +
                               std::to_string(b.size()) + ")");
  if (a.empty()) return 1.0;
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

}  // namespace kvs
