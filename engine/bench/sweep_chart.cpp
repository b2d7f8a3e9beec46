#include "engine/bench/sweep_chart.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace kvs {
namespace {

// Colours are given as RGB: the image is converted to RgbImage without a channel swap.
const cv::Scalar kText(30, 30, 30), kGrid(215, 215, 215), kBackground(255, 255, 255), kFull(120, 120, 120);
const cv::Scalar kLines[] = {{52, 101, 164}, {204, 0, 0}, {78, 154, 6}, {245, 121, 0}, {117, 80, 123}, {193, 125, 17}};
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

void text(cv::Mat& img, const std::string& s, int x, int y, double scale = 0.45, const cv::Scalar& colour = kText) {
  cv::putText(img, s, cv::Point(x, y), kFont, scale, colour, 1, cv::LINE_AA);
}

int text_width(const std::string& s, double scale = 0.45) {
  int baseline = 0;
  return cv::getTextSize(s, kFont, scale, 1, &baseline).width;
}

RgbImage to_rgb(const cv::Mat& img) {
  RgbImage out;
  out.width = img.cols;
  out.height = img.rows;
  out.pixels.assign(img.data, img.data + img.total() * img.elemSize());
  return out;
}

// An image scaled by a whole factor (nearest neighbour, so pixels stay pixels).
void paste(cv::Mat& canvas, const RgbImage& image, int x, int y, int cell) {
  if (image.width <= 0 || image.height <= 0) return;
  const cv::Mat src(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.pixels.data()));
  cv::Mat scaled;
  const double f = static_cast<double>(cell) / std::max(image.width, image.height);
  cv::resize(src, scaled, cv::Size(), f, f, f >= 1 ? cv::INTER_NEAREST : cv::INTER_AREA);
  scaled.copyTo(canvas(cv::Rect(x, y, scaled.cols, scaled.rows)));
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// One line panel: x categorical (the values), y from 0 to y_max.
struct Series {
  std::string label;
  std::vector<double> y;  // NaN: no point
};
void line_panel(cv::Mat& img, cv::Rect area, const std::string& title, const std::string& x_label,
                const std::vector<std::string>& xs, const std::vector<Series>& series, double full_level,
                double y_max) {
  text(img, title, area.x, area.y + 18, 0.55);
  const int left = area.x + 50, right = area.x + area.width - 10, top = area.y + 34, bottom = area.y + area.height - 40;
  for (int q = 0; q <= 4; ++q) {
    const int y = bottom - (bottom - top) * q / 4;
    cv::line(img, cv::Point(left, y), cv::Point(right, y), kGrid, 1);
    text(img, format("%.0f", y_max * q / 4), area.x + 4, y + 4, 0.4);
  }
  const size_t n = xs.size();
  auto x_at = [&](size_t i) {
    return n <= 1 ? (left + right) / 2
                  : left + 20 + (right - left - 40) * static_cast<int>(i) / static_cast<int>(n - 1);
  };
  auto y_at = [&](double v) {
    return bottom - static_cast<int>(std::lround((bottom - top) * std::clamp(v / y_max, 0.0, 1.0)));
  };
  for (size_t i = 0; i < n; ++i) text(img, xs[i], x_at(i) - text_width(xs[i], 0.4) / 2, bottom + 18, 0.4);
  text(img, x_label, (left + right) / 2 - text_width(x_label, 0.45) / 2, bottom + 36);
  if (std::isfinite(full_level))
    for (int x = left; x < right; x += 12)
      cv::line(img, cv::Point(x, y_at(full_level)), cv::Point(std::min(x + 6, right), y_at(full_level)), kFull, 1);
  for (size_t s = 0; s < series.size(); ++s) {
    const cv::Scalar& colour = kLines[s % (sizeof kLines / sizeof kLines[0])];
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(series[s].y[i])) continue;
      const cv::Point p(x_at(i), y_at(series[s].y[i]));
      cv::circle(img, p, 4, colour, cv::FILLED, cv::LINE_AA);
      if (i + 1 < n && std::isfinite(series[s].y[i + 1]))
        cv::line(img, p, cv::Point(x_at(i + 1), y_at(series[s].y[i + 1])), colour, 2, cv::LINE_AA);
    }
  }
}

}  // namespace

RgbImage draw_sweep_grid(const BenchSweep& sweep, const RgbImage& full,
                         const std::vector<std::vector<RgbImage>>& images) {
  constexpr int kCell = 128, kGap = 8, kHeader = 40;
  int label_width = text_width("full");
  for (const std::string& p : sweep.policies) label_width = std::max(label_width, text_width(p));
  label_width = std::min(label_width + 16, 320);
  const int columns = static_cast<int>(sweep.values.size()) + 1;
  const int rows = static_cast<int>(sweep.policies.size());
  const int width = label_width + columns * (kCell + kGap) + kGap;
  const int height = kHeader + rows * (kCell + kGap) + kGap;
  cv::Mat img(height, width, CV_8UC3, kBackground);
  auto column_x = [&](int c) { return label_width + kGap + c * (kCell + kGap); };
  text(img, "full", column_x(0) + (kCell - text_width("full")) / 2, kHeader - 12);
  for (size_t v = 0; v < sweep.values.size(); ++v) {
    const std::string head = sweep.key + "=" + sweep.values[v];
    text(img, head, column_x(static_cast<int>(v) + 1) + (kCell - text_width(head)) / 2, kHeader - 12);
  }
  for (int p = 0; p < rows; ++p) {
    const int y = kHeader + p * (kCell + kGap);
    std::string label = sweep.policies[static_cast<size_t>(p)];
    while (label.size() > 4 && text_width(label) > label_width - 16) label = label.substr(0, label.size() - 4) + "...";
    text(img, label, 8, y + kCell / 2 + 5);
    paste(img, full, column_x(0), y, kCell);
    for (size_t v = 0; v < sweep.values.size(); ++v)
      if (static_cast<size_t>(p) < images.size() && v < images[static_cast<size_t>(p)].size())
        paste(img, images[static_cast<size_t>(p)][v], column_x(static_cast<int>(v) + 1), y, kCell);
  }
  return to_rgb(img);
}

RgbImage draw_sweep_chart(const BenchSweep& sweep, const std::vector<BenchRecord>& records) {
  constexpr int kPanelWidth = 480, kPanelHeight = 320, kTop = 36, kLegendRow = 20;
  const int legend = kLegendRow * static_cast<int>(sweep.policies.size() + 1) + 10;
  cv::Mat img(kTop + kPanelHeight + legend, 2 * kPanelWidth, CV_8UC3, kBackground);
  const BenchRecord* full = nullptr;
  for (const BenchRecord& r : records)
    if (r.policy == "full") full = &r;
  std::string subtitle;
  if (!records.empty())
    subtitle = ": " + records[0].model + ", " + std::to_string(records[0].images) + " images per policy";
  text(img, "KV Studio sweep over " + sweep.key + subtitle, 12, 24, 0.5);

  // Quality: class accuracy where judged, else agreement with the full cache.
  const bool judged = full && std::isfinite(full->class_accuracy);
  std::vector<Series> memory, quality;
  for (size_t p = 0; p < sweep.policies.size(); ++p) {
    Series m{sweep.policies[p], {}}, q{sweep.policies[p], {}};
    for (size_t v = 0; v < sweep.values.size(); ++v) {
      const BenchRecord* r = sweep.find(records, p, v);
      const double nan = std::nan("");
      m.y.push_back(r && r->kv_bytes_full > 0 ? 100.0 * r->kv_bytes_logical / r->kv_bytes_full : nan);
      q.y.push_back(r ? 100.0 * (judged ? r->class_accuracy : r->token_agreement) : nan);
    }
    memory.push_back(std::move(m));
    quality.push_back(std::move(q));
  }
  line_panel(img, cv::Rect(0, kTop, kPanelWidth, kPanelHeight), "KV cache kept, % of full", sweep.key, sweep.values,
             memory, 100.0, 100.0);
  line_panel(img, cv::Rect(kPanelWidth, kTop, kPanelWidth, kPanelHeight),
             judged ? "class accuracy, %" : "token agreement with full, %", sweep.key, sweep.values, quality,
             full ? 100.0 * (judged ? full->class_accuracy : full->token_agreement) : std::nan(""), 100.0);
  int y = kTop + kPanelHeight + kLegendRow;
  for (size_t p = 0; p < sweep.policies.size(); ++p, y += kLegendRow) {
    cv::line(img, cv::Point(14, y - 5), cv::Point(40, y - 5), kLines[p % (sizeof kLines / sizeof kLines[0])], 2,
             cv::LINE_AA);
    text(img, sweep.policies[p], 48, y);
  }
  for (int x = 14; x < 40; x += 12) cv::line(img, cv::Point(x, y - 5), cv::Point(x + 6, y - 5), kFull, 1);
  text(img, "full cache", 48, y);
  return to_rgb(img);
}

}  // namespace kvs
