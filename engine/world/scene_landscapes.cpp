// Landscape painters: sea sunsets, snowy ranges, mirrored lakes, night skies,
// forests, dunes, rolling hills and flower fields. Every scene spans the whole
// picture (sky gradient at the top, ground structure to the bottom edge) and is
// built from smooth gradients and anti-aliased shapes, not per-pixel noise.
#include <algorithm>
#include <cmath>

#include "engine/world/scene_painters.h"
#include "engine/world/scene_record.h"
#include "engine/world/scene_shapes.h"

namespace kvs::world::detail {

namespace {

constexpr float kPi = 3.14159265358979f;

// Lit/shadow mix for a ridge slope dy/dx (image y grows downwards): with the sun on
// the left, faces rising to the right (dy/dx < 0) face the sun.
float slope_light(float slope, bool sun_left, float sharpness) {
  const float s = sun_left ? -slope : slope;
  return 0.5f + 0.5f * std::tanh(sharpness * s);
}

}  // namespace

// ---------------------------------------------------------------------------
void paint_sunset_sea(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float horizon = rng.uniform(0.48f, 0.64f);
  const float late = rng.uniform(0.f, 1.f);  // 0 golden hour … 1 late dusk
  // Palettes: golden, rose, fiery red; each darkens towards dusk with `late`.
  static const uint32_t kTop[] = {0x3b5a9a, 0x34408f, 0x2a1a48};
  static const uint32_t kMid[] = {0xe8a070, 0xe07a7a, 0xc8405a};
  static const uint32_t kLow[] = {0xffd66a, 0xffbf5a, 0xff7a30};
  const int palette = rng.below(3);
  static const ColourName kPaletteName[] = {ColourName::orange, ColourName::pink, ColourName::red};
  facts.time = TimeOfDay::sunset;
  facts.water = Water::sea;
  add_colour(facts, kPaletteName[palette]);
  const Color top = jitter(mix(hex(kTop[palette]), hex(0x1a1238), 0.7f * late), rng, 0.08f);
  const Color mid = jitter(mix(hex(kMid[palette]), hex(0xa8457a), 0.6f * late), rng, 0.08f);
  const Color low = jitter(mix(hex(kLow[palette]), hex(0xff6a34), 0.6f * late), rng, 0.06f);
  const Gradient sky({{0.f, top}, {0.55f, mid}, {1.f, low}});
  paint_gradient(canvas, sky, 0.f, horizon);

  // Sun, low and partly set.
  const float sx = rng.uniform(0.22f, 0.78f);
  const float sr = rng.uniform(0.045f, 0.085f);
  // Mostly touching the horizon; sometimes still a little above it.
  const float sy = horizon - sr * (rng.chance(0.25) ? rng.uniform(1.5f, 3.5f) : rng.uniform(-0.4f, 1.3f));
  const Color sun = mix(hex(0xfff2c4), hex(0xffa866), late);
  canvas.glow({sx, sy}, sr * 5.f, sr * 3.f, mix(low, sun, 0.5f), 0.45f);
  canvas.fill_circle({sx, sy}, sr, sun);
  facts.light = disc_light(LightKind::sun, sx, sy);

  // Long cloud streaks lit from below.
  const int streaks = rng.range(0, 6);
  facts.clouds = streaks;
  for (int i = 0; i < streaks; ++i) {
    const float cy = rng.uniform(0.1f, horizon - 0.08f);
    const float cx = rng.uniform(0.05f, 0.95f);
    const Color c_top = mix(mid, top, rng.uniform(0.3f, 0.8f));
    const Color c_bottom = mix(low, sun, rng.uniform(0.f, 0.6f));
    draw_streak_cloud(canvas, {cx, cy}, rng.uniform(0.16f, 0.38f), rng.uniform(0.012f, 0.026f), c_top, c_bottom,
                      rng.uniform(0.65f, 0.9f));
  }
  // Sea: the horizon colour darkening into deep water, with the sun's path.
  const Color sea_near = jitter(mix(hex(0x3a2f5f), hex(0x140f2a), late), rng, 0.08f);
  const Color sea_far = mix(mix(low, mid, 0.5f), sea_near, 0.45f);
  const float path_w = sr * rng.uniform(0.9f, 1.4f);
  canvas.paint(horizon, 1.f, [&](float x, float y, Color) {
    const float d = (y - horizon) / (1.f - horizon);
    Color c = mix(sea_far, sea_near, smoothstep(0.f, 0.7f, d));
    const float w = path_w * (1.f + 2.5f * d);
    const float dx = (x - sx) / w;
    return c + mix(low, sun, 0.4f) * (0.55f * std::exp(-dx * dx) * (1.f - 0.55f * d));
  });
  // Islands on the horizon, sometimes.
  if (rng.chance(0.45)) {
    const float ix = rng.uniform(0.f, 1.f);
    add_placed(facts, "island", "islands", ix);
    const float iw = rng.uniform(0.12f, 0.3f);
    const float ih = rng.uniform(0.03f, 0.07f);
    const float peak = rng.uniform(0.3f, 0.7f);
    const Color land = mix(top, hex(0x0d0a18), 0.6f);
    std::vector<Point> pts;
    for (int k = 0; k <= 32; ++k) {
      const float t = static_cast<float>(k) / 32.f;
      const float d = (t - peak) / 0.28f, e = (t - 0.5f * (peak + 1.f)) / 0.15f;
      const float hump = std::exp(-d * d) + 0.45f * std::exp(-e * e);
      pts.push_back({ix - iw + 2.f * iw * t, horizon + 0.002f - ih * hump * std::sin(kPi * t)});
    }
    canvas.fill_polygon(pts, land);
  }
  // Glitter: short bright strokes along the path.
  const int glints = rng.range(12, 22);
  for (int i = 0; i < glints; ++i) {
    const float d = rng.uniform(0.03f, 1.f);
    const float gy = horizon + d * d * (1.f - horizon);
    const float w = path_w * (1.f + 2.5f * (gy - horizon) / (1.f - horizon));
    const float gx = sx + rng.normal(0.f, 0.55f) * w;
    canvas.fill_ellipse({gx, gy}, w * rng.uniform(0.25f, 0.7f), 0.005f + 0.006f * d, 0.f, mix(sun, low, 0.3f),
                        rng.uniform(0.35f, 0.75f));
  }
}

// ---------------------------------------------------------------------------
namespace {

// Points from a to b, displaced sideways by midpoint displacement (a rocky edge).
std::vector<Point> jagged_edge(SceneRng& rng, Point a, Point b, int levels, float roughness) {
  const std::size_t n = (std::size_t{1} << levels) + 1;
  std::vector<float> off(n, 0.f);
  const float len = std::hypot(b.x - a.x, b.y - a.y);
  float scale = len * roughness;
  for (std::size_t step = n - 1; step > 1; step /= 2) {
    for (std::size_t i = step / 2; i < n; i += step)
      off[i] = 0.5f * (off[i - step / 2] + off[i + step / 2]) + rng.uniform(-scale, scale);
    scale *= 0.55f;
  }
  const float nx = -(b.y - a.y) / len, ny = (b.x - a.x) / len;
  std::vector<Point> pts(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float t = static_cast<float>(i) / static_cast<float>(n - 1);
    pts[i] = {a.x + (b.x - a.x) * t + nx * off[i], a.y + (b.y - a.y) * t + ny * off[i]};
  }
  return pts;
}

struct RangeStyle {
  Color lit, shadow;            // rock faces
  Color snow_lit, snow_shadow;  // snow faces
  Color haze;                   // colour the foot of the range fades to
  float haze_amount = 0.f;
  bool sun_left = true;
  bool snow = true;
};

// A mountain range: `peaks` peaks standing on `base`, each split by a crest line
// into a sunlit face and a shadow face, snow above a jagged snow line.
void draw_range(Canvas& canvas, SceneRng& rng, float base, float height, int peaks, const RangeStyle& st) {
  struct Peak {
    float x, h, w;
  };
  std::vector<Peak> list;
  for (int i = 0; i < peaks; ++i) {
    const float t = (static_cast<float>(i) + rng.uniform(0.15f, 0.85f)) / static_cast<float>(peaks);
    const float h = height * rng.uniform(0.55f, 1.f);
    list.push_back({-0.1f + 1.2f * t, h, h * rng.uniform(1.1f, 1.9f)});
  }
  // Tallest first, so lower peaks stand in front of them.
  std::sort(list.begin(), list.end(), [](const Peak& a, const Peak& b) { return a.h > b.h; });
  const float bottom = base + 0.25f;
  canvas.fill_rect(-0.01f, base - 0.01f, 1.01f, bottom, 1.f, [&](float, float y) {
    return mix(mix(st.lit, st.shadow, 0.5f), st.haze, st.haze_amount * smoothstep(base - 0.1f, base + 0.05f, y));
  });
  for (const Peak& p : list) {
    const Point summit{p.x, base - p.h};
    const Point left{p.x - p.w, base + 0.02f}, right{p.x + p.w, base + 0.02f};
    const Point foot{p.x + p.w * rng.uniform(-0.35f, 0.35f), base + 0.02f};
    std::vector<Point> lf = jagged_edge(rng, left, summit, 5, 0.08f);
    std::vector<Point> rf = jagged_edge(rng, summit, right, 5, 0.08f);
    std::vector<Point> crest = jagged_edge(rng, summit, foot, 4, 0.05f);
    const float snow_line = base - p.h * rng.uniform(0.35f, 0.6f);
    const float snow_f = rng.uniform(20.f, 40.f), snow_ph = rng.uniform(0.f, 6.f);
    auto face = [&](bool sunny) {
      const Color rock = sunny ? st.lit : st.shadow;
      const Color snow = sunny ? st.snow_lit : st.snow_shadow;
      return [&, rock, snow](float x, float y) {
        const float line = snow_line + 0.025f * std::sin(snow_f * x + snow_ph);
        const float in_snow = st.snow ? 1.f - smoothstep(line - 0.004f, line + 0.004f, y) : 0.f;
        const Color c = mix(rock, snow, in_snow);
        return mix(c, st.haze, st.haze_amount * smoothstep(summit.y, base + 0.05f, y));
      };
    };
    std::vector<Point> west = lf, east;
    west.insert(west.end(), crest.begin() + 1, crest.end());
    east = rf;
    for (std::size_t k = crest.size() - 1; k-- > 1;) east.push_back(crest[k]);
    canvas.fill_polygon(west, 1.f, face(st.sun_left));
    canvas.fill_polygon(east, 1.f, face(!st.sun_left));
  }
}

}  // namespace

void paint_mountains(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float hue = rng.uniform(0.56f, 0.63f);
  // Daylight, or the pink alpenglow of dawn.
  const float glow = rng.chance(0.3) ? rng.uniform(0.5f, 1.f) : 0.f;
  facts.time = glow > 0.f ? TimeOfDay::dawn : TimeOfDay::day;
  const Color sky_top = mix(hsv(hue, rng.uniform(0.55f, 0.72f), rng.uniform(0.62f, 0.85f)), hex(0x4a4a90), glow);
  const Color sky_low = mix(hsv(hue - 0.02f, rng.uniform(0.1f, 0.22f), rng.uniform(0.9f, 0.98f)), hex(0xf2c0b0), glow);
  paint_gradient(canvas, Gradient({{0.f, sky_top}, {0.8f, sky_low}, {1.f, sky_low}}), 0.f, 1.f);
  facts.clouds = 0;
  if (rng.chance(0.5)) {
    const int clouds = rng.range(1, 2);
    facts.clouds = clouds;
    for (int i = 0; i < clouds; ++i)
      draw_streak_cloud(canvas, {rng.uniform(0.1f, 0.9f), rng.uniform(0.06f, 0.2f)}, rng.uniform(0.12f, 0.25f),
                        rng.uniform(0.015f, 0.03f), hex(0xffffff), sky_low, 0.6f);
  }
  const bool sun_left = rng.chance(0.5);
  facts.light = side_light(sun_left ? 0.f : 1.f);
  const int ranges = rng.range(2, 3);
  const bool grey_rock = rng.chance(0.5);
  const Color rock = jitter(grey_rock ? hex(0x5d6a85) : hex(0x75645c), rng, 0.12f);
  add_colour(facts, ColourName::white);  // the snow
  add_colour(facts, grey_rock ? ColourName::grey : ColourName::brown);
  float last_base = 0.f;
  for (int i = 0; i < ranges; ++i) {
    const float depth = static_cast<float>(i) / static_cast<float>(ranges);  // 0 far … near
    RangeStyle st;
    st.sun_left = sun_left;
    st.haze = sky_low;
    st.haze_amount = 0.45f;
    const Color r = mix(rock, sky_low, 0.5f * (1.f - depth) * (1.f - depth));
    st.lit = mix(r * 1.3f, sky_low, 0.1f);
    st.shadow = r * 0.7f;
    st.snow_lit = mix(mix(hex(0xf8fafd), hex(0xffd2c0), glow), sky_low, 0.2f * (1.f - depth));
    st.snow_shadow = mix(hex(0x9fb0cf), sky_low, 0.3f * (1.f - depth));
    const float base = 0.6f + 0.16f * depth + rng.uniform(-0.03f, 0.03f);
    draw_range(canvas, rng, base, rng.uniform(0.26f, 0.4f) * (1.f - 0.35f * depth), rng.range(3, 5), st);
    last_base = base;
  }
  // A forested valley in front.
  const Color valley = jitter(hex(0x2c4636), rng, 0.15f);
  const Curve foothill = rolling_curve(rng, last_base + rng.uniform(0.02f, 0.08f), 0.035f, 3, 0.5f, 2.f);
  canvas.fill_polygon(foothill.area_below(), 1.f, [&](float x, float y) {
    return mix(valley * 1.15f, valley * 0.7f, smoothstep(foothill.at(x), 1.f, y));
  });
  if (rng.chance(0.75)) {
    facts.features.push_back(kFeatureTrees);
    const Color crown = valley * 0.6f;
    float x = rng.uniform(-0.05f, 0.05f);
    while (x < 1.05f) {
      const float h = rng.uniform(0.08f, 0.16f);
      draw_conifer(canvas, {x, foothill.at(x) + 0.05f}, h, h * 0.42f, crown, crown * 1.3f, crown * 0.7f);
      x += rng.uniform(0.03f, 0.1f);
    }
  }
}

// ---------------------------------------------------------------------------
void paint_lake(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float shore = rng.uniform(0.47f, 0.58f);
  const bool evening = rng.chance(0.35);
  facts.time = evening ? TimeOfDay::evening : TimeOfDay::day;
  facts.water = Water::lake;
  const Color sky_top = jitter(evening ? hex(0x5a6fb0) : hex(0x3f86c8), rng, 0.1f);
  const Color sky_low = jitter(evening ? hex(0xf4c7a0) : hex(0xcfe6f2), rng, 0.06f);
  paint_gradient(canvas, Gradient({{0.f, sky_top}, {1.f, sky_low}}), 0.f, shore);
  const int clouds = rng.range(0, 2);
  facts.clouds = clouds;
  for (int i = 0; i < clouds; ++i)
    draw_cloud(canvas, rng, {rng.uniform(0.1f, 0.9f), rng.uniform(0.1f, shore * 0.45f)}, rng.uniform(0.14f, 0.26f),
               hex(0xffffff), mix(sky_low, sky_top, 0.35f), 0.85f);
  // Far hills or mountains.
  const Color far = mix(jitter(hex(0x53708a), rng, 0.12f), sky_low, 0.35f);
  const bool peaks = rng.chance(0.5);
  facts.features.push_back(peaks ? kFeatureSnowyPeaks : kFeatureHillsBehind);
  const Curve back = peaks ? ridge_curve(rng, shore - 0.005f, rng.uniform(0.14f, 0.24f), 0.5f)
                           : rolling_curve(rng, shore - 0.06f, rng.uniform(0.04f, 0.08f), 3, 0.6f, 2.f);
  canvas.fill_polygon(back.area_below(shore + 0.01f), 1.f, [&](float x, float y) {
    return mix(far * 1.15f, far * 0.85f, smoothstep(back.at(x), shore, y));
  });
  if (peaks)
    canvas.fill_polygon(back.band_to(ridge_curve(rng, back.min_y() + 0.07f, 0.05f, 0.6f, 6)),
                        mix(hex(0xf2f5fa), sky_low, 0.3f));
  // A wooded shore: rounded bank with conifers.
  const Color wood = jitter(hex(0x2f5a3a), rng, 0.15f);
  const Curve bank = rolling_curve(rng, shore - 0.02f, 0.015f, 2, 1.f, 3.f);
  canvas.fill_polygon(bank.area_below(shore + 0.005f), wood * 0.8f);
  float x = rng.uniform(-0.04f, 0.02f);
  const bool gap = rng.chance(0.5);
  const float gap_x = rng.uniform(0.2f, 0.8f);
  while (x < 1.04f) {
    const float h = rng.uniform(0.05f, 0.12f);
    if (!(gap && std::abs(x - gap_x) < 0.12f))
      draw_conifer(canvas, {x, shore + 0.002f}, h, h * 0.42f, wood * rng.uniform(0.75f, 1.f), wood * 1.25f,
                   wood * 0.5f);
    x += rng.uniform(0.02f, 0.05f);
  }
  // Mirror everything into the water, tinted and darkened with depth.
  canvas.mirror_below(shore, 1.f);
  const Color water = jitter(evening ? hex(0x3a4a78) : hex(0x1f4f6e), rng, 0.1f);
  canvas.paint(shore, 1.f, [&](float, float y, Color c) {
    const float d = (y - shore) / (1.f - shore);
    return mix(c * 0.88f, water, 0.25f + 0.35f * d);
  });
  // Ripple lines.
  const int ripples = rng.range(6, 12);
  for (int i = 0; i < ripples; ++i) {
    const float d = rng.uniform(0.02f, 1.f);
    canvas.fill_ellipse({rng.uniform(0.f, 1.f), shore + d * (1.f - shore)}, rng.uniform(0.06f, 0.22f),
                        0.004f + 0.006f * d, 0.f, mix(sky_low, hex(0xffffff), 0.3f), rng.uniform(0.2f, 0.4f));
  }
  canvas.fill_rect(-0.01f, shore - 0.002f, 1.01f, shore + 0.004f, mix(sky_low, water, 0.3f), 0.5f);
}

// ---------------------------------------------------------------------------
void paint_night_sky(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const Color top = jitter(hex(0x04060f), rng, 0.3f);
  const Color low = jitter(rng.chance(0.5) ? hex(0x1b2d55) : hex(0x2a2450), rng, 0.15f);
  const Gradient sky({{0.f, top}, {0.45f, mix(top, low, 0.35f)}, {1.f, low}});
  paint_gradient(canvas, sky, 0.f, 1.f);
  facts.time = TimeOfDay::night;
  // The Milky Way: a faint band across the sky.
  if (rng.chance(0.65)) {
    facts.features.push_back(kFeatureMilkyWay);
    const float angle = rng.uniform(-0.9f, 0.9f);
    const Point c{rng.uniform(0.3f, 0.7f), rng.uniform(0.25f, 0.5f)};
    const float nx = -std::sin(angle), ny = std::cos(angle);
    const float width = rng.uniform(0.07f, 0.13f);
    const Color band = hex(0x8f8fb8) * rng.uniform(0.25f, 0.4f);
    canvas.paint([&](float x, float y, Color cur) {
      const float d = ((x - c.x) * nx + (y - c.y) * ny) / width;
      const float along = (x - c.x) * ny - (y - c.y) * nx;
      return cur + band * (std::exp(-d * d) * (0.75f + 0.25f * std::cos(7.f * along)));
    });
  }
  const float ground = rng.uniform(0.8f, 0.9f);
  // Stars: soft dots, a few bright ones with halos.
  const int stars = rng.range(60, 130);
  for (int i = 0; i < stars; ++i) {
    const Point p{rng.uniform(0.f, 1.f), rng.uniform(0.f, ground)};
    const float b = rng.uniform(0.f, 1.f);
    const Color tint = b < 0.15f ? hex(0xbcd0ff) : (b > 0.9f ? hex(0xffe2b0) : hex(0xffffff));
    const float size = 0.004f + 0.006f * b * b;
    canvas.glow(p, size, tint, 0.55f + 0.6f * b);
    if (b > 0.93f) canvas.glow(p, size * 4.f, tint, 0.12f);
  }
  // Moon, sometimes a crescent.
  const float mr = rng.uniform(0.04f, 0.075f);
  const Point m{rng.uniform(0.15f, 0.85f), rng.uniform(0.12f, 0.4f)};
  const Color moon = jitter(hex(0xf3efd8), rng, 0.04f);
  canvas.glow(m, mr * 3.f, hex(0x8090b0), 0.3f);
  // The disc, or a crescent (the disc minus an offset disc), anti-aliased analytically.
  const bool crescent = rng.chance(0.5);
  facts.light = disc_light(LightKind::moon, m.x, m.y);
  facts.light.crescent = crescent;
  const float a = rng.uniform(0.f, 2.f * kPi);
  const Point o{m.x + std::cos(a) * mr * 0.55f, m.y + std::sin(a) * mr * 0.55f};
  const float px = canvas.pixel();
  canvas.paint(m.y - mr - 2.f * px, m.y + mr + 2.f * px, [&](float x, float y, Color cur) {
    const float d = std::hypot(x - m.x, y - m.y);
    if (d > mr + px) return cur;
    float cover = clamp01((mr - d) / px + 0.5f);
    if (crescent) cover *= clamp01((std::hypot(x - o.x, y - o.y) - mr * 0.95f) / px + 0.5f);
    const float shade = ((x - m.x) + (y - m.y)) / (2.8f * mr);
    const Color lit = moon * (1.f - 0.12f * smoothstep(-0.3f, 0.5f, shade));
    return mix(cur, lit, cover);
  });
  if (!crescent) {
    for (int i = 0; i < 3; ++i)
      canvas.fill_circle({m.x + rng.uniform(-0.45f, 0.45f) * mr, m.y + rng.uniform(-0.45f, 0.45f) * mr},
                         mr * rng.uniform(0.15f, 0.3f), moon * 0.82f, 0.5f);
  }
  // Black hills and a tree line.
  const Color land = jitter(hex(0x05060c), rng, 0.3f);
  const Curve hills = rolling_curve(rng, ground, rng.uniform(0.03f, 0.07f), 3, 0.5f, 2.f);
  canvas.fill_polygon(hills.area_below(), land);
  if (rng.chance(0.6)) {
    facts.features.push_back(kFeatureTrees);
    float x = rng.uniform(-0.05f, 0.2f);
    const float end = rng.uniform(0.5f, 1.05f);
    while (x < end) {
      const float h = rng.uniform(0.05f, 0.11f);
      draw_conifer(canvas, {x, hills.at(x) + 0.01f}, h, h * 0.42f, land, land, land);
      x += rng.uniform(0.02f, 0.06f);
    }
  }
}

// ---------------------------------------------------------------------------
void paint_forest(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const int light = rng.below(3);  // 0 clear day, 1 mist, 2 golden evening
  facts.time = light == 2 ? TimeOfDay::evening : TimeOfDay::day;
  facts.mist = light == 1;
  static const uint32_t kSkyTop[] = {0x7fb4da, 0xc2d2d0, 0xe9c98e};
  static const uint32_t kSkyLow[] = {0xe2eee6, 0xedf0e6, 0xfbeccb};
  static const uint32_t kLitTint[] = {0xb8e0a0, 0xd0e4c8, 0xf2d27a};
  const Color sky_top = jitter(hex(kSkyTop[light]), rng, 0.07f);
  const Color sky_low = jitter(hex(kSkyLow[light]), rng, 0.04f);
  const Color tint = hex(kLitTint[light]);
  paint_gradient(canvas, Gradient({{0.f, sky_top}, {1.f, sky_low}}), 0.f, 0.75f);
  if (light != 1 && rng.chance(0.6)) {
    const Point sun{rng.uniform(0.1f, 0.9f), rng.uniform(0.08f, 0.25f)};
    canvas.glow(sun, 0.16f, hex(0xfff2c8), 0.55f);
    facts.light = disc_light(LightKind::sun, sun.x, sun.y);
  }
  const float hue = rng.uniform(0.27f, 0.4f);
  const Color near = hsv(hue, rng.uniform(0.55f, 0.75f), rng.uniform(0.22f, 0.32f));
  add_colour(facts, name_of(hsv(hue, 0.7f, 0.7f)));
  const float haze_far = light == 1 ? 0.72f : 0.55f;
  const int layers = 4;
  static const float kBase[] = {0.4f, 0.56f, 0.74f, 0.98f};
  static const float kHeight[] = {0.15f, 0.22f, 0.32f, 0.58f};
  for (int i = 0; i < layers; ++i) {
    const float depth = static_cast<float>(i) / static_cast<float>(layers - 1);
    const float base = kBase[i] + rng.uniform(-0.02f, 0.02f);
    const float height = kHeight[i] * rng.uniform(0.9f, 1.1f);
    const float haze = haze_far * (1.f - depth);
    const Color crown = mix(near, sky_low, haze);
    const Color lit = mix(crown, mix(near * 1.6f, tint, 0.45f), 0.55f * (1.f - 0.6f * haze));
    const Color trunk = mix(hex(0x4a3426), sky_low, haze);
    const Curve floor = rolling_curve(rng, base - 0.03f, 0.015f, 2, 0.5f, 2.f);
    canvas.fill_polygon(floor.area_below(), crown * 0.95f);
    float x = rng.uniform(-0.08f, 0.f);
    while (x < 1.08f) {
      const float h = height * rng.uniform(0.75f, 1.2f);
      const float w = h * rng.uniform(0.34f, 0.46f);
      draw_conifer(canvas, {x, floor.at(x) + 0.03f}, h, w, crown * rng.uniform(0.85f, 1.08f), lit, trunk);
      x += w * rng.uniform(0.5f, 0.9f);
    }
    if (i < layers - 1) {
      // Ground mist at the foot of each layer gives depth.
      const float mist = light == 1 ? 0.45f : 0.25f;
      const float top = base - height;
      canvas.paint(top, base + 0.05f,
                   [&](float, float y, Color c) { return mix(c, sky_low, mist * smoothstep(top, base + 0.05f, y)); });
    }
  }
}

// ---------------------------------------------------------------------------
void paint_desert(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float horizon = rng.uniform(0.36f, 0.5f);
  const float afternoon = rng.chance(0.4) ? rng.uniform(0.5f, 1.f) : 0.f;  // warmer light, lower sun
  const Color sky_top = jitter(mix(hex(0x3d8fd1), hex(0x4a78c0), afternoon), rng, 0.1f);
  const Color sky_low = jitter(mix(hex(0xf3e2c0), hex(0xf6cf9a), afternoon), rng, 0.04f);
  paint_gradient(canvas, Gradient({{0.f, sky_top}, {1.f, sky_low}}), 0.f, horizon + 0.05f);
  const Point sun{rng.uniform(0.1f, 0.9f), rng.uniform(0.08f, 0.22f) + 0.1f * afternoon};
  facts.time = TimeOfDay::day;
  facts.light = disc_light(LightKind::sun, sun.x, sun.y);
  canvas.glow(sun, 0.22f, hex(0xfff6dc), 0.55f);
  canvas.fill_circle(sun, rng.uniform(0.035f, 0.05f), hex(0xfffbef));
  const bool sun_left = sun.x < 0.5f;
  const Color sand = mix(jitter(rng.chance(0.5) ? hex(0xe7b272) : hex(0xd99a5e), rng, 0.07f), hex(0xd9804a),
                         0.35f * afternoon);
  add_colour(facts, name_of(sand));
  add_colour(facts, ColourName::blue);  // the sky
  const int layers = rng.range(3, 4);
  for (int i = 0; i < layers; ++i) {
    const float depth = static_cast<float>(i) / static_cast<float>(layers - 1);
    const float base = horizon + 0.04f + (0.95f - horizon) * depth * 0.75f;
    const float amp = 0.05f + 0.1f * depth;
    // Dunes: sharp crests from |sin|, softened by a second wave.
    const float f1 = rng.uniform(0.7f, 1.6f), p1 = rng.uniform(0.f, kPi);
    const float f2 = rng.uniform(1.5f, 3.f), p2 = rng.uniform(0.f, 2.f * kPi);
    std::vector<float> ys(129);
    for (std::size_t k = 0; k < ys.size(); ++k) {
      const float x = static_cast<float>(k) / 128.f;
      const float crest = 1.f - std::abs(std::sin(kPi * f1 * x + p1));
      ys[k] = base - amp * (0.75f * crest * crest + 0.25f * (0.5f + 0.5f * std::sin(2.f * kPi * f2 * x + p2)));
    }
    const Curve dune(std::move(ys));
    const float haze = 0.5f * (1.f - depth);
    const Color lit = mix(sand * 1.12f, sky_low, haze);
    const Color shadow = mix(sand * Color{0.72f, 0.56f, 0.5f}, sky_low, haze);
    // Light and crest height depend on the column only: evaluate them once per column.
    const int cols = canvas.pixels();
    std::vector<float> col_light(static_cast<std::size_t>(cols)), col_y(static_cast<std::size_t>(cols));
    for (int c = 0; c < cols; ++c) {
      const float x = (static_cast<float>(c) + 0.5f) / static_cast<float>(cols);
      col_light[static_cast<std::size_t>(c)] = slope_light(dune.slope(x, 0.004f), sun_left, 4.f);
      col_y[static_cast<std::size_t>(c)] = dune.at(x);
    }
    canvas.fill_polygon(dune.area_below(), 1.f, [&](float x, float y) {
      const auto c = static_cast<std::size_t>(std::clamp(static_cast<int>(x * static_cast<float>(cols)), 0, cols - 1));
      // Shadows fade out further down the slope.
      const float below = smoothstep(0.f, 0.15f, y - col_y[c]);
      return mix(mix(shadow, lit, col_light[c]), mix(lit, shadow, 0.35f), below * 0.6f);
    });
  }
}

// ---------------------------------------------------------------------------
void paint_hills(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float horizon = rng.uniform(0.38f, 0.52f);
  const Color sky_top = jitter(hex(0x3f8fe0), rng, 0.08f);
  const Color sky_low = jitter(hex(0xcde9fb), rng, 0.04f);
  paint_gradient(canvas, Gradient({{0.f, sky_top}, {1.f, sky_low}}), 0.f, horizon + 0.1f);
  const int clouds = rng.range(1, 4);
  facts.time = TimeOfDay::day;
  facts.clouds = clouds;
  for (int i = 0; i < clouds; ++i)
    draw_cloud(canvas, rng, {rng.uniform(0.05f, 0.95f), rng.uniform(0.08f, horizon - 0.12f)}, rng.uniform(0.15f, 0.3f),
               hex(0xffffff), mix(sky_low, sky_top, 0.3f), 0.95f);
  const float hue = rng.uniform(0.15f, 0.32f);  // late-summer yellow … spring green
  add_colour(facts, name_of(hsv(hue, 0.7f, 0.7f)));
  add_colour(facts, ColourName::blue);  // the sky
  const int layers = 4;
  Curve front;
  for (int i = 0; i < layers; ++i) {
    const float depth = static_cast<float>(i) / static_cast<float>(layers - 1);
    const float base = horizon + (0.92f - horizon) * depth * 0.8f;
    const Curve hill = rolling_curve(rng, base, 0.04f + 0.05f * depth, 2, 0.4f, 1.5f);
    const Color green = hsv(hue + rng.uniform(-0.03f, 0.03f), 0.55f + 0.2f * depth, 0.5f + 0.3f * depth);
    const Color c = mix(green, sky_low, 0.45f * (1.f - depth));
    canvas.fill_polygon(hill.area_below(), 1.f, [&](float x, float y) {
      return mix(c * 1.1f, c * 0.8f, smoothstep(hill.at(x), hill.at(x) + 0.25f, y));
    });
    if (i == layers - 2 && rng.chance(0.6)) {
      const float tx = rng.uniform(0.15f, 0.85f);
      add_placed(facts, "tree", "trees", tx);
      const float h = rng.uniform(0.08f, 0.13f);
      draw_round_tree(canvas, {tx, hill.at(tx) + 0.01f}, h, c * 0.6f, c * 0.85f, hex(0x4a3528));
    }
    front = hill;
  }
  // A winding path in the foreground, sometimes.
  if (rng.chance(0.35)) {
    facts.features.push_back(kFeaturePath);
    const float x0 = rng.uniform(0.3f, 0.7f), wiggle = rng.uniform(0.05f, 0.12f), ph = rng.uniform(0.f, 6.f);
    const float top = front.at(x0) + 0.01f;
    std::vector<Point> left, right;
    for (int k = 0; k <= 24; ++k) {
      const float t = static_cast<float>(k) / 24.f;
      const float cx = x0 + wiggle * std::sin(ph + 5.f * t) * t, cy = top + (1.03f - top) * t;
      const float half = 0.004f + 0.07f * t * t;
      left.push_back({cx - half, cy});
      right.push_back({cx + half, cy});
    }
    left.insert(left.end(), right.rbegin(), right.rend());
    canvas.fill_polygon(left, 1.f,
                        [&](float, float y) { return mix(hex(0xcdbb88), hex(0xe2d3a4), smoothstep(top, 1.f, y)); });
  }
}

// ---------------------------------------------------------------------------
void paint_flower_fields(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float horizon = rng.uniform(0.32f, 0.46f);
  const Color sky_top = jitter(hex(0x4a8fd8), rng, 0.08f);
  const Color sky_low = jitter(hex(0xdcebf5), rng, 0.04f);
  paint_gradient(canvas, Gradient({{0.f, sky_top}, {1.f, sky_low}}), 0.f, horizon);
  const int clouds = rng.range(0, 3);
  facts.time = TimeOfDay::day;
  facts.clouds = clouds;
  for (int i = 0; i < clouds; ++i)
    draw_cloud(canvas, rng, {rng.uniform(0.05f, 0.95f), rng.uniform(0.07f, horizon - 0.12f)}, rng.uniform(0.12f, 0.22f),
               hex(0xffffff), mix(sky_low, sky_top, 0.3f), 0.9f);
  // Flower colours for the rows (a few per field, repeating).
  static const uint32_t kFlowers[] = {0xd7263d, 0xf5c518, 0xef6fa3, 0x7b3fa0, 0xf6f3ee, 0xf28c28, 0xe3413a};
  const int n_colours = rng.range(2, 4);
  std::vector<Color> rows;
  for (int i = 0; i < n_colours; ++i) {
    const int flower = rng.below(7);
    rows.push_back(jitter(hex(kFlowers[flower]), rng, 0.06f));
    add_colour(facts, name_of(rows.back()));
  }
  Color mean{};
  for (const Color& c : rows) mean = mean + c * (1.f / static_cast<float>(rows.size()));
  const Color leaf = jitter(hex(0x3f7a32), rng, 0.1f);
  const Color haze = mix(sky_low, leaf, 0.3f);
  const float vx = rng.uniform(0.25f, 0.75f);
  const float density = rng.uniform(1.6f, 2.6f);  // rows per unit of (x - vx) / depth
  const float phase = rng.uniform(0.f, 1.f);
  const float duty = rng.uniform(0.62f, 0.75f);
  const float pixel = canvas.pixel();
  const Color mean_field = mix(leaf, mean, duty);
  canvas.paint(horizon, 1.f, [&](float x, float y, Color) {
    const float depth = std::max(1e-4f, y - horizon);
    const float s = (x - vx) / depth * density + phase;
    const float cell = std::floor(s);
    const float f = s - cell;
    const float per_px = density * pixel / depth;  // row widths per pixel
    // Anti-aliased duty-cycle stripe; fades to the mean colour when rows get thinner than pixels.
    const float e = std::max(per_px, 1e-4f);
    const float cover = clamp01((std::min(f, duty - f) + 0.5f * e) / e);
    const int idx = static_cast<int>(cell) % static_cast<int>(rows.size());
    const Color flower = rows[static_cast<std::size_t>(idx < 0 ? idx + static_cast<int>(rows.size()) : idx)];
    // Rounded rows: lighter in the middle of a row.
    const float bulge = std::sin(kPi * clamp01(f / duty));
    Color c = mix(leaf * 0.8f, flower * (0.85f + 0.2f * bulge), cover);
    c = mix(c, mean_field, smoothstep(0.12f, 0.45f, per_px));
    return mix(c, haze, 0.55f * (1.f - smoothstep(0.f, 0.35f, depth)));
  });
  // A tree line on the horizon, and sometimes a windmill.
  const Color trees = mix(jitter(hex(0x2e5a3a), rng, 0.12f), sky_low, 0.3f);
  float x = -0.02f;
  while (x < 1.02f) {
    const float r = rng.uniform(0.012f, 0.025f);
    if (rng.chance(0.7)) canvas.fill_circle({x, horizon - r * 0.4f}, r, trees);
    x += r * rng.uniform(1.f, 2.5f);
  }
  canvas.fill_rect(-0.01f, horizon - 0.006f, 1.01f, horizon + 0.004f, trees);
  if (rng.chance(0.55)) {
    const float wx = rng.uniform(0.1f, 0.9f), wh = rng.uniform(0.1f, 0.16f);
    add_placed(facts, "windmill", "windmills", wx);
    const Color body = jitter(hex(0x5a3d2e), rng, 0.1f);
    canvas.fill_polygon({{wx - wh * 0.18f, horizon + 0.002f},
                         {wx + wh * 0.18f, horizon + 0.002f},
                         {wx + wh * 0.1f, horizon - wh},
                         {wx - wh * 0.1f, horizon - wh}},
                        body);
    canvas.fill_polygon({{wx - wh * 0.14f, horizon - wh}, {wx + wh * 0.14f, horizon - wh}, {wx, horizon - wh * 1.2f}},
                        body * 0.7f);
    const Point hub{wx, horizon - wh * 1.02f};
    const float a0 = rng.uniform(0.f, kPi / 2.f);
    for (int b = 0; b < 4; ++b) {
      const float a = a0 + static_cast<float>(b) * kPi / 2.f;
      const Point tip{hub.x + std::cos(a) * wh * 0.85f, hub.y + std::sin(a) * wh * 0.85f};
      canvas.stroke({hub, tip}, 0.018f, mix(hex(0xe9e2d0), body, 0.3f), 0.95f);
    }
  }
}

}  // namespace kvs::world::detail
