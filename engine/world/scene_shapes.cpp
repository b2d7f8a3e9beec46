#include "engine/world/scene_shapes.h"

#include <algorithm>
#include <cmath>

namespace kvs::world::detail {

namespace {
constexpr float kPi = 3.14159265358979f;
}

Color Gradient::at(float t) const {
  if (stops_.empty()) return {};
  if (t <= stops_.front().first) return stops_.front().second;
  for (std::size_t i = 1; i < stops_.size(); ++i) {
    if (t <= stops_[i].first) {
      const float span = stops_[i].first - stops_[i - 1].first;
      const float u = span > 0.f ? (t - stops_[i - 1].first) / span : 1.f;
      return mix(stops_[i - 1].second, stops_[i].second, smoothstep(0.f, 1.f, u));
    }
  }
  return stops_.back().second;
}

void paint_gradient(Canvas& canvas, const Gradient& g, float y0, float y1) {
  const float span = std::max(1e-6f, y1 - y0);
  canvas.paint(y0, y1, [&](float, float y, Color) { return g.at((y - y0) / span); });
}

float Curve::at(float x) const {
  if (ys_.empty()) return 0.f;
  const float pos = clamp01(x) * static_cast<float>(ys_.size() - 1);
  const std::size_t i = std::min(static_cast<std::size_t>(pos), ys_.size() - 2);
  const float f = pos - static_cast<float>(i);
  return ys_[i] + (ys_[i + 1] - ys_[i]) * f;
}

float Curve::slope(float x, float radius) const {
  const float a = at(x - radius), b = at(x + radius);
  return (b - a) / (2.f * radius);
}

float Curve::min_y() const { return ys_.empty() ? 0.f : *std::min_element(ys_.begin(), ys_.end()); }

std::vector<Point> Curve::area_below(float bottom) const {
  std::vector<Point> pts;
  pts.reserve(ys_.size() + 2);
  const float last = static_cast<float>(ys_.size() - 1);
  // Extend slightly past the side edges so anti-aliasing leaves no seam.
  for (std::size_t i = 0; i < ys_.size(); ++i) {
    const float x = static_cast<float>(i) / last * 1.02f - 0.01f;
    pts.push_back({x, ys_[i]});
  }
  pts.push_back({1.01f, bottom});
  pts.push_back({-0.01f, bottom});
  return pts;
}

std::vector<Point> Curve::band_to(const Curve& lower) const {
  std::vector<Point> pts;
  const float last = static_cast<float>(ys_.size() - 1);
  for (std::size_t i = 0; i < ys_.size(); ++i) {
    const float x = static_cast<float>(i) / last;
    pts.push_back({x * 1.02f - 0.01f, ys_[i]});
  }
  for (std::size_t k = ys_.size(); k-- > 0;) {
    const float x = static_cast<float>(k) / last;
    pts.push_back({x * 1.02f - 0.01f, std::max(ys_[k], lower.at(x))});
  }
  return pts;
}

std::vector<float> ridge_profile(SceneRng& rng, int levels, float roughness) {
  const std::size_t n = (std::size_t{1} << levels) + 1;
  std::vector<float> v(n, 0.f);
  v[0] = rng.uniform(-0.5f, 0.5f);
  v[n - 1] = rng.uniform(-0.5f, 0.5f);
  float scale = 1.f;
  for (std::size_t step = n - 1; step > 1; step /= 2) {
    for (std::size_t i = step / 2; i < n; i += step) {
      v[i] = 0.5f * (v[i - step / 2] + v[i + step / 2]) + rng.uniform(-scale, scale);
    }
    scale *= roughness;
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const float lo_v = *lo, range = std::max(1e-6f, *hi - *lo);
  for (float& x : v) x = (x - lo_v) / range;
  return v;
}

Curve ridge_curve(SceneRng& rng, float base_y, float amplitude, float roughness, int levels) {
  std::vector<float> p = ridge_profile(rng, levels, roughness);
  for (float& v : p) v = base_y - amplitude * v;
  return Curve(std::move(p));
}

Curve rolling_curve(SceneRng& rng, float base_y, float amplitude, int waves, float min_cycles, float max_cycles) {
  std::vector<float> freq, phase, amp;
  float total = 0.f;
  for (int i = 0; i < waves; ++i) {
    freq.push_back(rng.uniform(min_cycles, max_cycles));
    phase.push_back(rng.uniform(0.f, 2.f * kPi));
    amp.push_back(rng.uniform(0.4f, 1.f) / static_cast<float>(i + 1));
    total += amp.back();
  }
  const int n = 129;
  std::vector<float> ys(n);
  for (int k = 0; k < n; ++k) {
    const float x = static_cast<float>(k) / static_cast<float>(n - 1);
    float s = 0.f;
    for (int i = 0; i < waves; ++i) s += amp[i] * std::sin(2.f * kPi * freq[i] * x + phase[i]);
    ys[k] = base_y - amplitude * s / total;
  }
  return Curve(std::move(ys));
}

Color jitter(Color c, SceneRng& rng, float amount) {
  return {clamp01(c.r * (1.f + rng.uniform(-amount, amount))), clamp01(c.g * (1.f + rng.uniform(-amount, amount))),
          clamp01(c.b * (1.f + rng.uniform(-amount, amount)))};
}

void draw_cloud(Canvas& canvas, SceneRng& rng, Point c, float width, Color lit, Color shade, float alpha) {
  const float base = c.y + width * 0.12f;
  const float top = c.y - width * 0.35f;
  auto colour = [&](float, float y) { return mix(lit, shade, smoothstep(top, base, y)); };
  const int puffs = rng.range(4, 7);
  for (int i = 0; i < puffs; ++i) {
    const float t = (static_cast<float>(i) + 0.5f) / static_cast<float>(puffs);
    const float px = c.x + (t - 0.5f) * width * 0.85f;
    // Bigger puffs in the middle.
    const float r = width * (0.12f + 0.16f * std::sin(kPi * t)) * rng.uniform(0.8f, 1.15f);
    const float py = std::min(base - r * 0.6f, c.y - r * 0.2f + rng.uniform(-0.1f, 0.1f) * r);
    canvas.fill_circle({px, py}, r, alpha, colour);
  }
  // Flat base.
  canvas.fill_ellipse({c.x, base - width * 0.06f}, width * 0.46f, width * 0.07f, 0.f, alpha, colour);
}

void draw_streak_cloud(Canvas& canvas, Point c, float half_width, float half_height, Color top, Color bottom,
                       float alpha) {
  canvas.fill_ellipse(c, half_width, half_height, 0.f, alpha, [&](float, float y) {
    return mix(top, bottom, smoothstep(c.y - half_height, c.y + half_height, y));
  });
}

void draw_conifer(Canvas& canvas, Point base, float height, float width, Color crown, Color lit_side, Color trunk) {
  const float trunk_h = height * 0.12f;
  canvas.fill_rect(base.x - width * 0.07f, base.y - trunk_h * 1.5f, base.x + width * 0.07f, base.y, trunk);
  const float cx = base.x;
  auto colour = [&](float x, float) { return x < cx ? lit_side : crown; };
  // Three stacked tiers, each narrower.
  const float crown_bottom = base.y - trunk_h;
  const float crown_h = height - trunk_h;
  for (int tier = 0; tier < 3; ++tier) {
    const float t = static_cast<float>(tier);
    const float bottom = crown_bottom - crown_h * 0.26f * t;
    const float top = bottom - crown_h * (0.55f - 0.06f * t);
    const float half = width * 0.5f * (1.f - 0.24f * t);
    canvas.fill_polygon({{cx - half, bottom}, {cx + half, bottom}, {cx, top}}, 1.f, colour);
  }
}

void draw_round_tree(Canvas& canvas, Point base, float height, Color crown, Color lit_side, Color trunk) {
  const float r = height * 0.32f;
  canvas.fill_rect(base.x - height * 0.04f, base.y - height * 0.5f, base.x + height * 0.04f, base.y, trunk);
  const Point c{base.x, base.y - height + r};
  canvas.fill_circle(c, r, 1.f, [&](float x, float y) {
    const float d = ((x - c.x) + (y - c.y)) / (2.f * r);  // light from the top left
    return mix(lit_side, crown, smoothstep(-0.5f, 0.4f, d));
  });
}

}  // namespace kvs::world::detail
