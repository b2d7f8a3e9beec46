#pragma once
// A float RGB drawing surface for the procedural world (internal to engine/world).
//
// Scenes are drawn in normalised coordinates: x from 0 (left) to 1 (right), y from
// 0 (top) to 1 (bottom), so a scene's layout does not depend on the resolution it is
// drawn at. Shapes are rasterised with anti-aliasing into a coverage mask (OpenCV,
// in the .cpp only) and then blended with a colour or a per-pixel colour function,
// which gives gradients and shading inside shapes. The canvas is drawn supersampled
// (an integer multiple of the output size) and box-filtered down at the end.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/image/rgb_image.h"

namespace kvs::world::detail {

struct Color {
  float r = 0, g = 0, b = 0;
};
inline Color operator+(Color a, Color b) { return {a.r + b.r, a.g + b.g, a.b + b.b}; }
inline Color operator-(Color a, Color b) { return {a.r - b.r, a.g - b.g, a.b - b.b}; }
inline Color operator*(Color a, float s) { return {a.r * s, a.g * s, a.b * s}; }
inline Color operator*(Color a, Color b) { return {a.r * b.r, a.g * b.g, a.b * b.b}; }
inline Color mix(Color a, Color b, float t) { return a + (b - a) * t; }
inline float clamp01(float v) { return v < 0.f ? 0.f : (v > 1.f ? 1.f : v); }
inline float smoothstep(float e0, float e1, float x) {
  const float t = clamp01((x - e0) / (e1 - e0));
  return t * t * (3.f - 2.f * t);
}
// Hue in [0, 1) (wraps), saturation and value in [0, 1].
Color hsv(float h, float s, float v);
// Hex literal 0xRRGGBB.
inline Color hex(uint32_t rgb) {
  return {static_cast<float>((rgb >> 16) & 0xFF) / 255.f, static_cast<float>((rgb >> 8) & 0xFF) / 255.f,
          static_cast<float>(rgb & 0xFF) / 255.f};
}

struct Point {
  float x = 0, y = 0;
};

// Half-open pixel rectangle [x0, x1) × [y0, y1).
struct PixelBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
};

class Canvas {
 public:
  explicit Canvas(int pixels);

  int pixels() const { return n_; }
  // One pixel in normalised units.
  float pixel() const { return 1.f / static_cast<float>(n_); }

  Color at(int x, int y) const {
    const float* p = &rgb_[(static_cast<std::size_t>(y) * n_ + x) * 3];
    return {p[0], p[1], p[2]};
  }
  void put(int x, int y, Color c) {
    float* p = &rgb_[(static_cast<std::size_t>(y) * n_ + x) * 3];
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
  }
  void blend(int x, int y, Color c, float a) { put(x, y, mix(at(x, y), c, a)); }

  // Sets every pixel whose centre lies in [y0, y1) to f(x, y, current colour).
  template <class F>
  void paint(float y0, float y1, F&& f) {
    const int r0 = std::max(0, row_of(y0)), r1 = std::min(n_, row_of(y1));
    for (int y = r0; y < r1; ++y) {
      const float fy = (static_cast<float>(y) + 0.5f) / static_cast<float>(n_);
      for (int x = 0; x < n_; ++x) {
        const float fx = (static_cast<float>(x) + 0.5f) / static_cast<float>(n_);
        put(x, y, f(fx, fy, at(x, y)));
      }
    }
  }
  template <class F>
  void paint(F&& f) {
    paint(0.f, 1.f, f);
  }

  // Filled shapes; `f(x, y)` gives the colour at a pixel centre, blended with
  // alpha × coverage.
  template <class F>
  void fill_polygon(const std::vector<Point>& pts, float alpha, F&& f) {
    blend_mask(rasterize_polygon(pts), alpha, f);
  }
  void fill_polygon(const std::vector<Point>& pts, Color c, float alpha = 1.f) {
    fill_polygon(pts, alpha, [c](float, float) { return c; });
  }
  template <class F>
  void fill_ellipse(Point centre, float rx, float ry, float angle_deg, float alpha, F&& f) {
    blend_mask(rasterize_ellipse(centre, rx, ry, angle_deg), alpha, f);
  }
  void fill_ellipse(Point centre, float rx, float ry, float angle_deg, Color c, float alpha = 1.f) {
    fill_ellipse(centre, rx, ry, angle_deg, alpha, [c](float, float) { return c; });
  }
  template <class F>
  void fill_circle(Point centre, float r, float alpha, F&& f) {
    fill_ellipse(centre, r, r, 0.f, alpha, f);
  }
  void fill_circle(Point centre, float r, Color c, float alpha = 1.f) { fill_ellipse(centre, r, r, 0.f, c, alpha); }
  template <class F>
  void fill_rect(float x0, float y0, float x1, float y1, float alpha, F&& f) {
    fill_polygon({{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, alpha, f);
  }
  void fill_rect(float x0, float y0, float x1, float y1, Color c, float alpha = 1.f) {
    fill_polygon({{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, c, alpha);
  }
  // A thick open polyline with round joins.
  template <class F>
  void stroke(const std::vector<Point>& pts, float width, float alpha, F&& f) {
    blend_mask(rasterize_polyline(pts, width), alpha, f);
  }
  void stroke(const std::vector<Point>& pts, float width, Color c, float alpha = 1.f) {
    stroke(pts, width, alpha, [c](float, float) { return c; });
  }

  // Adds colour × strength × exp(-(d / radius)²) around `centre` (light: sun
  // glow, stars, lamps). Pixels beyond 3 radii are untouched.
  void glow(Point centre, float radius, Color c, float strength);
  // An elliptical glow, radii rx and ry.
  void glow(Point centre, float rx, float ry, Color c, float strength);

  // Copies the rows above `axis` into the rows below it, mirrored (a still-water
  // reflection), replacing rows in [axis, y_end).
  void mirror_below(float axis, float y_end);

  // Area-downsamples to size × size (size must divide pixels()), rounds to 8 bits.
  RgbImage downsample(int size) const;

 private:
  int row_of(float y) const { return static_cast<int>(std::floor(y * static_cast<float>(n_) + 0.5f)); }
  PixelBox rasterize_polygon(const std::vector<Point>& pts);
  PixelBox rasterize_ellipse(Point centre, float rx, float ry, float angle_deg);
  PixelBox rasterize_polyline(const std::vector<Point>& pts, float width);

  template <class F>
  void blend_mask(PixelBox box, float alpha, F&& f) {
    const float inv = 1.f / static_cast<float>(n_);
    for (int y = box.y0; y < box.y1; ++y) {
      uint8_t* m = &mask_[static_cast<std::size_t>(y) * n_];
      const float fy = (static_cast<float>(y) + 0.5f) * inv;
      for (int x = box.x0; x < box.x1; ++x) {
        if (m[x] == 0) continue;
        const float a = alpha * static_cast<float>(m[x]) * (1.f / 255.f);
        m[x] = 0;  // the mask is kept clear between shapes
        blend(x, y, f((static_cast<float>(x) + 0.5f) * inv, fy), a);
      }
    }
  }

  int n_;
  std::vector<float> rgb_;     // n × n × 3, row-major
  std::vector<uint8_t> mask_;  // n × n coverage, zero outside a shape being drawn
};

}  // namespace kvs::world::detail
