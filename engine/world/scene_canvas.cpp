#include "engine/world/scene_canvas.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace kvs::world::detail {

namespace {

// OpenCV draws with fixed-point coordinates: 4 fractional bits.
constexpr int kShift = 4;
constexpr float kOne = 16.f;

}  // namespace

Color hsv(float h, float s, float v) {
  h = h - std::floor(h);
  const float h6 = h * 6.f;
  const int i = static_cast<int>(h6) % 6;
  const float f = h6 - std::floor(h6);
  const float p = v * (1.f - s), q = v * (1.f - s * f), t = v * (1.f - s * (1.f - f));
  switch (i) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

Canvas::Canvas(int pixels)
    : n_(pixels),
      rgb_(static_cast<std::size_t>(pixels) * pixels * 3, 0.f),
      mask_(static_cast<std::size_t>(pixels) * pixels, 0) {}

namespace {

PixelBox clip_box(float x0, float y0, float x1, float y1, int n, int margin) {
  PixelBox b;
  b.x0 = std::max(0, static_cast<int>(std::floor(x0)) - margin);
  b.y0 = std::max(0, static_cast<int>(std::floor(y0)) - margin);
  b.x1 = std::min(n, static_cast<int>(std::ceil(x1)) + margin + 1);
  b.y1 = std::min(n, static_cast<int>(std::ceil(y1)) + margin + 1);
  if (b.empty()) return PixelBox{};
  return b;
}

cv::Point fixed(float x, float y, const PixelBox& box, float n) {
  return {static_cast<int>(std::lround((x * n - static_cast<float>(box.x0) - 0.5f) * kOne)),
          static_cast<int>(std::lround((y * n - static_cast<float>(box.y0) - 0.5f) * kOne))};
}

}  // namespace

PixelBox Canvas::rasterize_polygon(const std::vector<Point>& pts) {
  if (pts.size() < 3) return {};
  const float n = static_cast<float>(n_);
  float x0 = pts[0].x, x1 = pts[0].x, y0 = pts[0].y, y1 = pts[0].y;
  for (const Point& p : pts) {
    x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  }
  const PixelBox box = clip_box(x0 * n, y0 * n, x1 * n, y1 * n, n_, 2);
  if (box.empty()) return box;
  cv::Mat mask(n_, n_, CV_8UC1, mask_.data());
  cv::Mat roi = mask(cv::Rect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0));
  std::vector<cv::Point> poly;
  poly.reserve(pts.size());
  for (const Point& p : pts) poly.push_back(fixed(p.x, p.y, box, n));
  const cv::Point* data = poly.data();
  const int count = static_cast<int>(poly.size());
  cv::fillPoly(roi, &data, &count, 1, cv::Scalar(255), cv::LINE_AA, kShift);
  return box;
}

PixelBox Canvas::rasterize_ellipse(Point c, float rx, float ry, float angle_deg) {
  const float n = static_cast<float>(n_);
  const float r = std::max(rx, ry);
  const PixelBox box = clip_box((c.x - r) * n, (c.y - r) * n, (c.x + r) * n, (c.y + r) * n, n_, 2);
  if (box.empty()) return box;
  cv::Mat mask(n_, n_, CV_8UC1, mask_.data());
  cv::Mat roi = mask(cv::Rect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0));
  const cv::Size axes(std::max(0, static_cast<int>(std::lround(rx * n * kOne))),
                      std::max(0, static_cast<int>(std::lround(ry * n * kOne))));
  cv::ellipse(roi, fixed(c.x, c.y, box, n), axes, static_cast<double>(angle_deg), 0.0, 360.0, cv::Scalar(255),
              cv::FILLED, cv::LINE_AA, kShift);
  return box;
}

PixelBox Canvas::rasterize_polyline(const std::vector<Point>& pts, float width) {
  if (pts.size() < 2) return {};
  const float n = static_cast<float>(n_);
  float x0 = pts[0].x, x1 = pts[0].x, y0 = pts[0].y, y1 = pts[0].y;
  for (const Point& p : pts) {
    x0 = std::min(x0, p.x), x1 = std::max(x1, p.x), y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
  }
  const int margin = static_cast<int>(std::ceil(width * n)) + 2;
  const PixelBox box = clip_box(x0 * n, y0 * n, x1 * n, y1 * n, n_, margin);
  if (box.empty()) return box;
  cv::Mat mask(n_, n_, CV_8UC1, mask_.data());
  cv::Mat roi = mask(cv::Rect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0));
  std::vector<cv::Point> line;
  line.reserve(pts.size());
  for (const Point& p : pts) line.push_back(fixed(p.x, p.y, box, n));
  const cv::Point* data = line.data();
  const int count = static_cast<int>(line.size());
  const int thickness = std::max(1, static_cast<int>(std::lround(width * n)));
  cv::polylines(roi, &data, &count, 1, false, cv::Scalar(255), thickness, cv::LINE_AA, kShift);
  return box;
}

void Canvas::glow(Point c, float radius, Color col, float strength) { glow(c, radius, radius, col, strength); }

void Canvas::glow(Point c, float rx, float ry, Color col, float strength) {
  if (rx <= 0.f || ry <= 0.f) return;
  const float n = static_cast<float>(n_);
  const PixelBox box = clip_box((c.x - 3 * rx) * n, (c.y - 3 * ry) * n, (c.x + 3 * rx) * n, (c.y + 3 * ry) * n, n_, 0);
  const float inv = 1.f / n;
  for (int y = box.y0; y < box.y1; ++y) {
    const float dy = ((static_cast<float>(y) + 0.5f) * inv - c.y) / ry;
    for (int x = box.x0; x < box.x1; ++x) {
      const float dx = ((static_cast<float>(x) + 0.5f) * inv - c.x) / rx;
      const float d2 = dx * dx + dy * dy;
      if (d2 > 9.f) continue;
      put(x, y, at(x, y) + col * (strength * std::exp(-d2)));
    }
  }
}

void Canvas::mirror_below(float axis, float y_end) {
  const int a = std::clamp(row_of(axis), 0, n_);
  const int e = std::clamp(row_of(y_end), a, n_);
  for (int y = a; y < e; ++y) {
    const int src = std::max(0, 2 * a - 1 - y);  // past the top edge: repeat the top row
    std::copy_n(&rgb_[static_cast<std::size_t>(src) * n_ * 3], static_cast<std::size_t>(n_) * 3,
                &rgb_[static_cast<std::size_t>(y) * n_ * 3]);
  }
}

RgbImage Canvas::downsample(int size) const {
  // An exact box filter (what cv::resize INTER_AREA does for an integer factor),
  // written out so that the summation order, and so the pixels, do not depend on
  // OpenCV's SIMD dispatch.
  RgbImage out;
  out.width = size;
  out.height = size;
  out.pixels.resize(static_cast<std::size_t>(size) * size * 3);
  if (size <= 0 || n_ % size != 0) return out;
  const int f = n_ / size;
  const float norm = 1.f / static_cast<float>(f * f);
  std::vector<float> acc(static_cast<std::size_t>(size) * 3);
  for (int oy = 0; oy < size; ++oy) {
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int dy = 0; dy < f; ++dy) {
      const float* row = &rgb_[static_cast<std::size_t>(oy * f + dy) * n_ * 3];
      for (int ox = 0; ox < size; ++ox) {
        float* a = &acc[static_cast<std::size_t>(ox) * 3];
        const float* p = row + static_cast<std::size_t>(ox) * f * 3;
        for (int dx = 0; dx < f; ++dx, p += 3) {
          a[0] += p[0];
          a[1] += p[1];
          a[2] += p[2];
        }
      }
    }
    uint8_t* dst = &out.pixels[static_cast<std::size_t>(oy) * size * 3];
    for (int i = 0; i < size * 3; ++i)
      dst[i] = static_cast<uint8_t>(clamp01(acc[static_cast<std::size_t>(i)] * norm) * 255.f + 0.5f);
  }
  return out;
}

}  // namespace kvs::world::detail
