#include "ui/render/overlay_images.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace kvs::ui {
namespace {

// 256-entry inferno lookup, built once through OpenCV.
const cv::Mat& infernoLut() {
  static const cv::Mat lut = [] {
    cv::Mat ramp(1, 256, CV_8UC1);
    for (int i = 0; i < 256; ++i) ramp.at<uint8_t>(0, i) = static_cast<uint8_t>(i);
    cv::Mat colored;
    cv::applyColorMap(ramp, colored, cv::COLORMAP_INFERNO);  // BGR
    return colored;
  }();
  return lut;
}

QRgb inferno(double v, int alpha) {
  const int i = std::clamp(static_cast<int>(std::lround(v * 255.0)), 0, 255);
  const cv::Vec3b bgr = infernoLut().at<cv::Vec3b>(0, i);
  return qRgba(bgr[2], bgr[1], bgr[0], alpha);
}

double weightAt(const kvs::AttentionMap& map, int64_t position) {
  if (position < 0 || position >= static_cast<int64_t>(map.weights.size())) return 0;
  return map.weights[static_cast<size_t>(position)];
}

void spanToRects(int64_t begin, int64_t end, int64_t width, QVector<QRect>* out) {
  if (width <= 0) return;
  while (begin < end) {
    const int64_t row = begin / width, col = begin % width;
    const int64_t n = std::min(end - begin, width - col);
    out->push_back(QRect(static_cast<int>(col), static_cast<int>(row), static_cast<int>(n), 1));
    begin += n;
  }
}

// One colour per role: kept by rule (anchors, sinks), the latest entries (recent
// lines, window), chosen from by score (middle), not decided yet (buffer).
QColor regionColor(const std::string& name, size_t index) {
  if (name == "anchors" || name == "sinks") return QColor(90, 230, 120);
  if (name == "recent" || name == "window") return QColor(80, 190, 255);
  if (name == "middle") return QColor(235, 110, 220);
  if (name == "buffer") return QColor(255, 150, 90);
  static const QColor others[] = {QColor(180, 140, 255), QColor(120, 230, 230), QColor(230, 200, 120)};
  return others[index % 3];
}

}  // namespace

QImage attentionHeatmap(const kvs::AttentionMap& map, const TokenGrid& grid, int alpha) {
  QImage img(static_cast<int>(grid.width), static_cast<int>(grid.height), QImage::Format_ARGB32);
  img.fill(Qt::transparent);
  double peak = 0;
  for (int64_t i = 0; i < grid.imageTokens(); ++i) peak = std::max(peak, weightAt(map, grid.condition_tokens + i));
  if (peak <= 0) return img;
  const int64_t known = std::min(grid.tokens_done, grid.imageTokens());
  for (int64_t i = 0; i < known; ++i) {
    const double v = std::sqrt(std::max(0.0, weightAt(map, grid.condition_tokens + i)) / peak);
    // Opacity grows with the weight: cold tokens stay see-through, so the picture
    // reads under the map and only where attention goes is it covered.
    const int a = static_cast<int>(std::lround(alpha * (0.15 + 0.85 * v)));
    img.setPixel(static_cast<int>(i % grid.width), static_cast<int>(i / grid.width), inferno(v, a));
  }
  return img;
}

QImage attentionConditionStrip(const kvs::AttentionMap& map, const TokenGrid& grid) {
  const int n = static_cast<int>(std::max<int64_t>(1, grid.condition_tokens));
  QImage img(1, n, QImage::Format_ARGB32);
  double peak = 0;
  for (int64_t p = 0; p < map.positions; ++p) peak = std::max(peak, weightAt(map, p));
  for (int i = 0; i < n; ++i) img.setPixel(0, i, inferno(peak > 0 ? std::sqrt(weightAt(map, i) / peak) : 0, 255));
  return img;
}

double conditionAttentionShare(const kvs::AttentionMap& map, const TokenGrid& grid) {
  double cond = 0, total = 0;
  for (int64_t p = 0; p < static_cast<int64_t>(map.weights.size()); ++p) {
    total += map.weights[static_cast<size_t>(p)];
    if (p < grid.condition_tokens) cond += map.weights[static_cast<size_t>(p)];
  }
  return total > 0 ? cond / total : 0;
}

QImage colormapBar(int width, int height) {
  QImage img(std::max(1, width), std::max(1, height), QImage::Format_ARGB32);
  for (int x = 0; x < img.width(); ++x) {
    const QRgb c = inferno(img.width() > 1 ? static_cast<double>(x) / (img.width() - 1) : 0, 255);
    for (int y = 0; y < img.height(); ++y) img.setPixel(x, y, c);
  }
  return img;
}

QColor retainedColor() { return QColor(120, 220, 200); }
QColor evictedColor() { return QColor(150, 40, 55); }
QColor pendingColor() { return QColor(28, 30, 36); }

QImage retainedMaskOverlay(const kvs::RetainedMasks& masks, const TokenGrid& grid, int64_t layer, int64_t head,
                           int dim) {
  QImage img(static_cast<int>(grid.width), static_cast<int>(grid.height), QImage::Format_ARGB32);
  img.fill(Qt::transparent);
  const int64_t l0 = layer < 0 ? 0 : layer, l1 = layer < 0 ? masks.n_layer : std::min(layer + 1, masks.n_layer);
  const int64_t h0 = head < 0 ? 0 : head, h1 = head < 0 ? masks.kv_heads : std::min(head + 1, masks.kv_heads);
  const int64_t selected = std::max<int64_t>(1, (l1 - l0) * (h1 - h0));
  const int64_t known = std::min(grid.tokens_done, grid.imageTokens());
  for (int64_t i = 0; i < known; ++i) {
    const int64_t position = grid.condition_tokens + i;
    if (position >= masks.positions) break;
    int64_t evicted = 0;
    for (int64_t l = l0; l < l1; ++l)
      for (int64_t h = h0; h < h1; ++h) evicted += masks.retained(l, h, position) ? 0 : 1;
    if (evicted == 0) continue;
    const int a = static_cast<int>(std::lround(dim * static_cast<double>(evicted) / static_cast<double>(selected)));
    img.setPixel(static_cast<int>(i % grid.width), static_cast<int>(i / grid.width), qRgba(8, 8, 14, a));
  }
  return img;
}

QImage retainedMaskTile(const kvs::RetainedMasks& masks, const TokenGrid& grid, int64_t layer, int64_t head) {
  QImage img(static_cast<int>(grid.width), static_cast<int>(grid.height), QImage::Format_RGB32);
  img.fill(pendingColor());
  const int64_t known = std::min(grid.tokens_done, grid.imageTokens());
  const QRgb kept = retainedColor().rgb(), gone = evictedColor().rgb();
  for (int64_t i = 0; i < known; ++i) {
    const int64_t position = grid.condition_tokens + i;
    if (position >= masks.positions) break;
    img.setPixel(static_cast<int>(i % grid.width), static_cast<int>(i / grid.width),
                 masks.retained(layer, head, position) ? kept : gone);
  }
  return img;
}

QImage differenceHeatmap(const QImage& a_in, const QImage& b_in, int full_scale, int* max_diff) {
  if (a_in.isNull() || b_in.isNull() || a_in.size() != b_in.size()) return {};
  const QImage a = a_in.convertToFormat(QImage::Format_RGB888), b = b_in.convertToFormat(QImage::Format_RGB888);
  const cv::Mat ma(a.height(), a.width(), CV_8UC3, const_cast<uchar*>(a.constBits()),
                   static_cast<size_t>(a.bytesPerLine()));
  const cv::Mat mb(b.height(), b.width(), CV_8UC3, const_cast<uchar*>(b.constBits()),
                   static_cast<size_t>(b.bytesPerLine()));
  cv::Mat diff, gray;
  cv::absdiff(ma, mb, diff);
  cv::transform(diff, gray, cv::Matx13f(1.f / 3, 1.f / 3, 1.f / 3));  // mean over channels
  double lo = 0, hi = 0;
  cv::minMaxLoc(gray, &lo, &hi);
  if (max_diff) *max_diff = static_cast<int>(hi);
  cv::Mat scaled;
  gray.convertTo(scaled, CV_8UC1, 255.0 / std::max(1, full_scale));
  cv::Mat colored;
  cv::applyColorMap(scaled, colored, cv::COLORMAP_INFERNO);
  cv::cvtColor(colored, colored, cv::COLOR_BGR2RGB);
  return QImage(colored.data, colored.cols, colored.rows, static_cast<int>(colored.step), QImage::Format_RGB888).copy();
}

QVector<PolicyRegion> policyRegions(const std::vector<kvs::CacheRegion>& stated, const TokenGrid& grid) {
  QVector<PolicyRegion> regions;
  if (grid.width <= 0 || grid.height <= 0) return regions;
  for (size_t i = 0; i < stated.size(); ++i) {
    const kvs::CacheRegion& r = stated[i];
    PolicyRegion region{QString::fromStdString(r.label.empty() ? r.name : r.label), regionColor(r.name, i), {}};
    const int64_t begin = std::clamp<int64_t>(r.begin - grid.condition_tokens, 0, grid.imageTokens());
    const int64_t end = std::clamp<int64_t>(r.end - grid.condition_tokens, 0, grid.imageTokens());
    spanToRects(begin, end, grid.width, &region.rects);
    if (!region.rects.isEmpty()) regions << region;
  }
  const int64_t row = std::min(grid.tokens_done, grid.imageTokens()) / grid.width;  // the line being generated
  if (row < grid.height) {
    PolicyRegion current{QStringLiteral("current line"), QColor(255, 214, 64), {}};
    current.rects.push_back(QRect(0, static_cast<int>(row), static_cast<int>(grid.width), 1));
    regions << current;
  }
  return regions;
}

}  // namespace kvs::ui
