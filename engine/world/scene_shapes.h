#pragma once
// Building blocks shared by the scene painters (internal to engine/world): skies,
// ridge lines, clouds, trees.
#include <utility>
#include <vector>

#include "engine/world/scene_canvas.h"
#include "engine/world/scene_rng.h"

namespace kvs::world::detail {

// A vertical colour gradient: stops (position in [0, 1], colour) in increasing
// position, smoothly interpolated; clamped outside the first and last stop.
class Gradient {
 public:
  Gradient() = default;
  explicit Gradient(std::vector<std::pair<float, Color>> stops) : stops_(std::move(stops)) {}
  Color at(float t) const;

 private:
  std::vector<std::pair<float, Color>> stops_;
};

// Paints rows [y0, y1) with the gradient mapped onto [y0, y1].
void paint_gradient(Canvas& canvas, const Gradient& g, float y0, float y1);

// A curve y(x) over x in [0, 1], sampled at evenly spaced points.
class Curve {
 public:
  Curve() = default;
  explicit Curve(std::vector<float> ys) : ys_(std::move(ys)) {}
  float at(float x) const;
  // dy/dx of the curve smoothed over ±`radius` in x.
  float slope(float x, float radius) const;
  std::size_t samples() const { return ys_.size(); }
  float min_y() const;
  // The area between the curve and the bottom edge (slightly past it).
  std::vector<Point> area_below(float bottom = 1.02f) const;
  // The band between this curve (top) and max(this, lower) (bottom).
  std::vector<Point> band_to(const Curve& lower) const;

 private:
  std::vector<float> ys_;
};

// A jagged ridge by midpoint displacement: 2^levels + 1 samples with values in
// [0, 1] (1 = highest peak), rescaled so the range is used fully.
std::vector<float> ridge_profile(SceneRng& rng, int levels, float roughness);
// base_y - amplitude × profile.
Curve ridge_curve(SceneRng& rng, float base_y, float amplitude, float roughness, int levels = 7);
// base_y + Σ amplitude_i sin(...) with `waves` random low frequencies (gentle hills).
Curve rolling_curve(SceneRng& rng, float base_y, float amplitude, int waves, float min_cycles, float max_cycles);

// Per-channel multiplicative jitter of ±amount (palette variety).
Color jitter(Color c, SceneRng& rng, float amount);

// A puffy cumulus: overlapping discs with a flat base, lit from above.
void draw_cloud(Canvas& canvas, SceneRng& rng, Point centre, float width, Color lit, Color shade, float alpha);
// A long thin cloud streak (sunsets, dusk) lit from below.
void draw_streak_cloud(Canvas& canvas, Point centre, float half_width, float half_height, Color top, Color bottom,
                       float alpha);
// A conifer standing on `base` (trunk foot), `height` tall, `width` wide at the bottom.
void draw_conifer(Canvas& canvas, Point base, float height, float width, Color crown, Color lit_side, Color trunk);
// A round deciduous tree.
void draw_round_tree(Canvas& canvas, Point base, float height, Color crown, Color lit_side, Color trunk);

}  // namespace kvs::world::detail
