#include "engine/bench/bench_chart.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

namespace kvs {
namespace {

// Colours are given as RGB: the image is converted to RgbImage without a channel swap.
const cv::Scalar kText(30, 30, 30), kGrid(215, 215, 215), kKv(52, 101, 164), kAlloc(150, 180, 220), kSpeed(78, 154, 6),
    kBackground(255, 255, 255);
constexpr int kWidth = 960, kLabelWidth = 250, kRight = 120, kRow = 30, kBar = 18, kTitle = 40, kPanelGap = 30;
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

void text(cv::Mat& img, const std::string& s, int x, int y, double scale = 0.45, int thickness = 1) {
  cv::putText(img, s, cv::Point(x, y), kFont, scale, kText, thickness, cv::LINE_AA);
}

std::string fit_label(const std::string& s, double scale, int max_width) {
  std::string out = s;
  int baseline = 0;
  while (out.size() > 4 && cv::getTextSize(out, kFont, scale, 1, &baseline).width > max_width)
    out = out.substr(0, out.size() - 4) + "...";
  return out;
}

// One horizontal bar panel; returns the y below it.
template <typename ValueFn, typename LabelFn>
int panel(cv::Mat& img, int top, const std::string& title, const std::vector<BenchRecord>& records, double max_value,
          ValueFn value, LabelFn label, const cv::Scalar& colour,
          const std::function<double(const BenchRecord&)>& thin) {
  text(img, title, 12, top + 24, 0.6, 1);
  const int plot_left = kLabelWidth, plot_width = kWidth - kLabelWidth - kRight;
  const int rows_top = top + kTitle;
  const int rows_bottom = rows_top + kRow * static_cast<int>(records.size());
  for (int q = 0; q <= 4; ++q) {
    const int x = plot_left + plot_width * q / 4;
    cv::line(img, cv::Point(x, rows_top - 4), cv::Point(x, rows_bottom), kGrid, 1);
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const int y = rows_top + kRow * static_cast<int>(i);
    text(img, fit_label(records[i].policy, 0.45, kLabelWidth - 20), 12, y + kBar - 4);
    const double v = max_value > 0 ? std::clamp(value(records[i]) / max_value, 0.0, 1.0) : 0.0;
    const int w = std::max(1, static_cast<int>(v * plot_width));
    cv::rectangle(img, cv::Rect(plot_left, y, w, kBar), colour, cv::FILLED);
    if (thin) {
      const double t = max_value > 0 ? std::clamp(thin(records[i]) / max_value, 0.0, 1.0) : 0.0;
      cv::rectangle(img, cv::Rect(plot_left, y + kBar + 1, std::max(1, static_cast<int>(t * plot_width)), 4), kAlloc,
                    cv::FILLED);
    }
    text(img, label(records[i]), plot_left + w + 6, y + kBar - 4);
  }
  return rows_bottom + kPanelGap;
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double kv_share(const BenchRecord& r) { return r.kv_bytes_full > 0 ? 100.0 * r.kv_bytes_logical / r.kv_bytes_full : 0; }
double alloc_share(const BenchRecord& r) {
  return r.kv_bytes_full > 0 ? 100.0 * r.kv_bytes_allocated / r.kv_bytes_full : 0;
}

}  // namespace

RgbImage draw_bench_chart(const std::vector<BenchRecord>& records) {
  const int panel_height = kTitle + kRow * static_cast<int>(records.size()) + kPanelGap;
  const int height = 36 + 2 * panel_height + 10;
  cv::Mat img(height, kWidth, CV_8UC3, kBackground);
  std::string subtitle;
  if (!records.empty())
    subtitle = records[0].model + " on " + records[0].device + ", " + std::to_string(records[0].images) +
               " images, batch " + std::to_string(records[0].batch);
  text(img, fit_label("KV Studio policy benchmark: " + subtitle, 0.5, kWidth - 24), 12, 24, 0.5, 1);

  double max_share = 100.0;
  double max_speed = 0;
  for (const auto& r : records) {
    max_share = std::max({max_share, kv_share(r), alloc_share(r)});
    max_speed = std::max(max_speed, r.tokens_per_s);
  }
  int y = 36;
  y = panel(
      img, y, "KV cache retained at the end, % of full (thin bar: allocated)", records, max_share, kv_share,
      [](const BenchRecord& r) { return format("%.1f %%", kv_share(r)); }, kKv, alloc_share);
  panel(
      img, y, "Generation speed, image tokens/s", records, max_speed * 1.05,
      [](const BenchRecord& r) { return r.tokens_per_s; },
      [](const BenchRecord& r) { return format("%.1f", r.tokens_per_s) + format(" (x%.2f)", r.speedup_vs_full); },
      kSpeed, {});

  RgbImage out;
  out.width = img.cols;
  out.height = img.rows;
  out.pixels.assign(img.data, img.data + img.total() * img.elemSize());
  return out;
}

}  // namespace kvs
