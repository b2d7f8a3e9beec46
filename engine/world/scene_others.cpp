// Painters for the non-landscape classes: a city skyline at dusk, geometric
// tilings, a still life on a table, and an underwater scene.
#include <algorithm>
#include <cmath>

#include "engine/world/scene_painters.h"
#include "engine/world/scene_record.h"
#include "engine/world/scene_shapes.h"

namespace kvs::world::detail {

namespace {

constexpr float kPi = 3.14159265358979f;

// One building: a body with an optional stepped top or spire, and a grid of windows.
void draw_building(Canvas& canvas, SceneRng& rng, float x0, float x1, float top, Color wall, Color lit_window,
                   float lit_fraction, bool windows) {
  canvas.fill_rect(x0, top, x1, 1.02f, wall);
  const float w = x1 - x0;
  const int roof = rng.below(4);
  if (roof == 1) {
    const float inset = w * rng.uniform(0.15f, 0.3f);
    canvas.fill_rect(x0 + inset, top - w * rng.uniform(0.15f, 0.35f), x1 - inset, top + 0.005f, wall);
  } else if (roof == 2) {
    canvas.fill_polygon(
        {{x0 + w * 0.2f, top + 0.002f}, {x1 - w * 0.2f, top + 0.002f}, {(x0 + x1) / 2.f, top - w * 0.8f}}, wall);
  } else if (roof == 3) {
    canvas.fill_rect((x0 + x1) / 2.f - 0.005f, top - rng.uniform(0.04f, 0.08f), (x0 + x1) / 2.f + 0.005f, top, wall);
  }
  if (!windows) return;
  const float cw = 0.036f, ch = 0.042f;
  const int cols = std::max(1, static_cast<int>((w - 0.01f) / cw));
  const float margin = (w - static_cast<float>(cols) * cw) / 2.f;
  const Color dark = mix(wall, lit_window, 0.08f);
  for (float y = top + 0.025f; y + ch < 0.97f; y += ch) {
    for (int c = 0; c < cols; ++c) {
      const float wx = x0 + margin + static_cast<float>(c) * cw;
      const bool on = rng.chance(lit_fraction);
      canvas.fill_rect(wx + cw * 0.2f, y + ch * 0.18f, wx + cw * 0.8f, y + ch * 0.82f,
                       on ? lit_window * rng.uniform(0.8f, 1.f) : dark);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------
void paint_city_dusk(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float late = rng.uniform(0.f, 1.f);
  // Palettes: violet-orange dusk, the blue hour, a red dusk.
  static const uint32_t kTop[] = {0x2a3a7a, 0x142a66, 0x2a1e50};
  static const uint32_t kMid[] = {0x8a5a9a, 0x3f64a8, 0x9a4a70};
  static const uint32_t kLow[] = {0xffa060, 0xc8b8c8, 0xff7048};
  const int palette = rng.below(3);
  // The sky's colours as a person names them: violet over orange, blue, red.
  static const ColourName kPaletteNames[][2] = {{ColourName::purple, ColourName::orange},
                                                {ColourName::blue, ColourName::blue},
                                                {ColourName::red, ColourName::red}};
  facts.time = TimeOfDay::dusk;
  for (const ColourName c : kPaletteNames[palette]) add_colour(facts, c);
  const Color top = jitter(mix(hex(kTop[palette]), hex(0x121538), 0.6f * late), rng, 0.08f);
  const Color mid = jitter(mix(hex(kMid[palette]), hex(0x4a3a7a), 0.4f * late), rng, 0.08f);
  const Color low = jitter(mix(hex(kLow[palette]), hex(0xe8704a), 0.3f * late), rng, 0.06f);
  const Gradient sky({{0.f, top}, {0.5f, mid}, {0.85f, low}, {1.f, low}});
  paint_gradient(canvas, sky, 0.f, 1.f);
  if (rng.chance(0.5)) {
    const float mr = rng.uniform(0.025f, 0.04f);
    const Point moon{rng.uniform(0.1f, 0.9f), rng.uniform(0.08f, 0.25f)};
    canvas.fill_circle(moon, mr, hex(0xf6efd8), 0.9f);
    facts.light = disc_light(LightKind::moon, moon.x, moon.y);
  }
  // Back row: hazy silhouettes.
  const Color back = mix(mid, hex(0x2a2040), 0.55f);
  float x = rng.uniform(-0.06f, 0.f);
  while (x < 1.f) {
    const float w = rng.uniform(0.05f, 0.12f);
    draw_building(canvas, rng, x, x + w, rng.uniform(0.3f, 0.62f), back, low * 0.7f, 0.1f, false);
    x += w * rng.uniform(0.8f, 1.1f);
  }
  // Front row: dark towers with lit windows.
  const Color wall = jitter(hex(0x16141f), rng, 0.2f);
  const Color lamp = rng.chance(0.7) ? hex(0xffd27a) : hex(0xfff0c8);
  const float lit = rng.uniform(0.3f, 0.6f);
  x = rng.uniform(-0.08f, -0.01f);
  while (x < 1.f) {
    const float w = rng.uniform(0.1f, 0.2f);
    const float top_y = rng.uniform(0.42f, 0.78f);
    draw_building(canvas, rng, x, x + w, top_y, wall * rng.uniform(0.8f, 1.2f), lamp, lit, true);
    x += w + rng.uniform(-0.02f, 0.03f);
  }
  // Street with a row of lamps.
  canvas.fill_rect(-0.01f, 0.95f, 1.01f, 1.01f, wall * 0.6f);
  const float spacing = rng.uniform(0.12f, 0.2f);
  for (float lx = rng.uniform(0.f, spacing); lx < 1.f; lx += spacing) canvas.glow({lx, 0.95f}, 0.018f, lamp, 0.6f);
}

// ---------------------------------------------------------------------------
void paint_tiling(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float hue = rng.uniform(0.f, 1.f);
  const int scheme = rng.below(3);
  const float hue2 = hue + (scheme == 0 ? 0.5f : (scheme == 1 ? 0.33f : 0.08f));
  const Color a = hsv(hue, rng.uniform(0.5f, 0.85f), rng.uniform(0.55f, 0.9f));
  const Color b = hsv(hue2, rng.uniform(0.15f, 0.6f), rng.uniform(0.75f, 0.98f));
  const Color c = hsv(hue + 0.5f * (hue2 - hue), rng.uniform(0.4f, 0.8f), rng.uniform(0.25f, 0.5f));
  const int kind = rng.below(6);
  const float cell = 1.f / static_cast<float>(rng.range(3, 7));
  const float angle = rng.chance(0.5) ? 0.f : rng.uniform(-0.6f, 0.6f);
  if (angle != 0.f) facts.features.push_back(kFeatureTilted);
  // The colours by the area they cover: stripes are half b, hexagons leave only
  // thin gaps of a, the other patterns are at least a third a.
  static const char* kPatterns[] = {"checkerboard", "diamonds", "stripes", "triangles", "hexagons"};
  if (kind < 5) facts.pattern = kPatterns[kind];
  for (const Color col :
       kind == 2 ? std::vector<Color>{b, a} : (kind == 4 ? std::vector<Color>{b, c} : std::vector<Color>{a, b}))
    add_colour(facts, name_of(col));
  const float ca = std::cos(angle), sa = std::sin(angle);
  // Lattice coordinates (u, v) → image, rotated about the centre.
  auto to_image = [&](float u, float v) {
    return Point{0.5f + ca * (u - 0.5f) - sa * (v - 0.5f), 0.5f + sa * (u - 0.5f) + ca * (v - 0.5f)};
  };
  auto quad = [&](float u0, float v0, float u1, float v1) {
    return std::vector<Point>{to_image(u0, v0), to_image(u1, v0), to_image(u1, v1), to_image(u0, v1)};
  };
  canvas.paint([&](float, float, Color) { return a; });
  const int reach = static_cast<int>(std::ceil(1.f / cell)) + 2;
  switch (kind) {
    case 0:  // checkerboard
      for (int i = -reach; i < 2 * reach; ++i)
        for (int j = -reach; j < 2 * reach; ++j)
          if (((i + j) & 1) == 0) canvas.fill_polygon(quad(i * cell, j * cell, (i + 1) * cell, (j + 1) * cell), b);
      break;
    case 1:  // diamonds (checkerboard at 45° with an inner accent)
      for (int i = -reach; i < 2 * reach; ++i)
        for (int j = -reach; j < 2 * reach; ++j) {
          const float cu = (static_cast<float>(i) + 0.5f) * cell, cv = (static_cast<float>(j) + 0.5f) * cell;
          const float h = cell * 0.5f;
          canvas.fill_polygon({to_image(cu, cv - h), to_image(cu + h, cv), to_image(cu, cv + h), to_image(cu - h, cv)},
                              ((i + j) & 1) ? b : c);
        }
      break;
    case 2:  // bold stripes with a thin accent stripe
      for (int i = -2 * reach; i < 3 * reach; ++i) {
        const float u = static_cast<float>(i) * cell;
        canvas.fill_polygon(quad(u, -1.f, u + cell * 0.5f, 2.f), b);
        canvas.fill_polygon(quad(u + cell * 0.62f, -1.f, u + cell * 0.78f, 2.f), c);
      }
      break;
    case 3:  // triangles
      for (int i = -reach; i < 2 * reach; ++i)
        for (int j = -reach; j < 2 * reach; ++j) {
          const float u = i * cell, v = j * cell;
          canvas.fill_polygon({to_image(u, v), to_image(u + cell, v), to_image(u, v + cell)}, ((i + j) & 1) ? b : c);
        }
      break;
    case 4: {  // hexagons in three colours
      const float r = cell * 0.62f;
      const float dx = r * std::sqrt(3.f), dy = r * 1.5f;
      const int ni = static_cast<int>(1.6f / dx) + 3, nj = static_cast<int>(1.6f / dy) + 3;
      for (int j = -nj; j < nj; ++j)
        for (int i = -ni; i < ni; ++i) {
          const float cu = 0.5f + static_cast<float>(i) * dx + ((j & 1) ? dx / 2.f : 0.f);
          const float cv = 0.5f + static_cast<float>(j) * dy;
          std::vector<Point> hex_pts;
          for (int k = 0; k < 6; ++k) {
            const float t = kPi / 6.f + static_cast<float>(k) * kPi / 3.f;
            hex_pts.push_back(to_image(cu + r * 0.93f * std::cos(t), cv + r * 0.93f * std::sin(t)));
          }
          const int q = i - (j - (j & 1)) / 2;  // axial coordinates: (q - j) mod 3 colours neighbours apart
          const int colour = ((q - j) % 3 + 3) % 3;
          canvas.fill_polygon(hex_pts, colour == 0 ? b : (colour == 1 ? c : mix(a, b, 0.5f)));
        }
      break;
    }
    default: {  // concentric squares or rings from a random centre
      const Point centre{rng.uniform(0.3f, 0.7f), rng.uniform(0.3f, 0.7f)};
      const bool rings = rng.chance(0.5);
      facts.pattern = rings ? "rings" : "squares";
      const float step = cell * 0.5f;
      for (int k = static_cast<int>(1.5f / step); k > 0; --k) {
        const float r = static_cast<float>(k) * step;
        const Color col = (k % 3 == 0) ? c : ((k & 1) ? b : a);
        if (rings) canvas.fill_circle(centre, r, col);
        else
          canvas.fill_polygon({to_image(centre.x - r, centre.y - r), to_image(centre.x + r, centre.y - r),
                               to_image(centre.x + r, centre.y + r), to_image(centre.x - r, centre.y + r)},
                              col);
      }
      break;
    }
  }
  // Soft light across the pattern.
  const Point light{rng.uniform(0.f, 1.f), rng.uniform(0.f, 1.f)};
  canvas.paint([&](float x, float y, Color cur) {
    const float d = std::hypot(x - light.x, y - light.y);
    return cur * (1.08f - 0.3f * d);
  });
}

// ---------------------------------------------------------------------------
namespace {

// Sphere shading with the light from the upper left.
Color sphere_shade(Color base, float nx, float ny) {
  const float nz = std::sqrt(std::max(0.f, 1.f - nx * nx - ny * ny));
  const float lambert = std::max(0.f, -0.45f * nx - 0.55f * ny + 0.7f * nz);
  const float spec = std::pow(std::max(0.f, -0.35f * nx - 0.45f * ny + 0.82f * nz), 24.f);
  return base * (0.3f + 0.8f * lambert) + Color{1.f, 1.f, 1.f} * (0.55f * spec);
}

}  // namespace

void paint_still_life(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const Color wall = hsv(rng.uniform(0.f, 1.f), rng.uniform(0.15f, 0.35f), rng.uniform(0.45f, 0.68f));
  const Point light{rng.uniform(0.15f, 0.45f), rng.uniform(0.1f, 0.3f)};
  const float table_y = rng.uniform(0.6f, 0.72f);
  canvas.paint(0.f, table_y, [&](float x, float y, Color) {
    const float d = std::hypot(x - light.x, (y - light.y) * 1.3f);
    return wall * (1.25f - 0.55f * smoothstep(0.f, 0.9f, d));
  });
  const bool cloth = rng.chance(0.4);
  facts.features.push_back(cloth ? kFeatureTablecloth : kFeatureWoodenTable);
  const Color table = cloth ? hsv(rng.uniform(0.f, 1.f), rng.uniform(0.1f, 0.4f), rng.uniform(0.75f, 0.9f))
                            : jitter(hex(0x8a5a34), rng, 0.15f);
  canvas.paint(table_y, 1.f, [&](float x, float y, Color) {
    const float d = (y - table_y) / (1.f - table_y);
    return table * (1.05f - 0.35f * d - 0.15f * std::abs(x - light.x));
  });
  canvas.fill_rect(-0.01f, table_y - 0.004f, 1.01f, table_y + 0.008f, table * 1.2f, 0.8f);

  // 1-3 objects standing on the table, drawn back to front.
  const int count = rng.range(1, 3);
  std::vector<std::pair<float, float>> spots;  // (foot y, centre x)
  for (int i = 0; i < count; ++i) {
    const float x = (static_cast<float>(i) + 0.5f) / static_cast<float>(count) + rng.uniform(-0.06f, 0.06f);
    spots.push_back({table_y + rng.uniform(0.07f, 0.22f), 0.15f + 0.7f * x});
  }
  std::sort(spots.begin(), spots.end());
  for (int i = 0; i < count; ++i) {
    const float foot = spots[static_cast<std::size_t>(i)].first;
    const float cx = spots[static_cast<std::size_t>(i)].second;
    const int kind = (count == 1 || rng.chance(0.4)) ? 0 : rng.range(1, 2);  // vase, fruit, ball
    const Color colour = hsv(rng.uniform(0.f, 1.f), rng.uniform(0.5f, 0.85f), rng.uniform(0.55f, 0.9f));
    static const char* kNouns[][2] = {{"vase", "vases"}, {"fruit", "fruits"}, {"striped ball", "striped balls"}};
    add_placed(facts, kNouns[kind][0], kNouns[kind][1], cx);
    facts.objects.back().coloured = true;
    facts.objects.back().colour = name_of(colour);
    if (kind == 0) {
      const float h = rng.uniform(0.3f, 0.5f) * (count == 3 ? 0.85f : 1.f), w = h * rng.uniform(0.25f, 0.4f);
      const float neck = rng.uniform(0.28f, 0.5f), belly_end = rng.uniform(0.5f, 0.75f);
      auto radius = [&](float t) {  // t = 0 foot … 1 lip
        const float bump = std::sin(kPi * clamp01(t / belly_end));
        const float body = neck + (1.f - neck) * std::max(0.f, bump);
        const float foot_r = 0.6f * (1.f - smoothstep(0.f, 0.1f, t));
        return w * (std::max(body, foot_r) + 0.3f * smoothstep(0.86f, 1.f, t));
      };
      canvas.fill_ellipse({cx + 0.04f, foot}, w * 1.4f, w * 0.22f, 0.f, hex(0x000000), 0.3f);
      std::vector<Point> pts;
      for (int k = 0; k <= 24; ++k) {
        const float t = static_cast<float>(k) / 24.f;
        pts.push_back({cx - radius(t), foot - t * h});
      }
      for (int k = 24; k >= 0; --k) {
        const float t = static_cast<float>(k) / 24.f;
        pts.push_back({cx + radius(t), foot - t * h});
      }
      canvas.fill_polygon(pts, 1.f, [&](float x, float y) {
        const float r = std::max(1e-4f, radius((foot - y) / h));
        const float s = std::clamp((x - cx) / r, -1.f, 1.f);
        return sphere_shade(colour, s, -0.15f);
      });
      canvas.fill_ellipse({cx, foot - h}, radius(1.f) * 0.8f, radius(1.f) * 0.18f, 0.f, colour * 0.3f);
    } else {
      const float r = kind == 1 ? rng.uniform(0.06f, 0.09f) : rng.uniform(0.09f, 0.13f);
      const Point c{cx, foot - r};
      canvas.fill_ellipse({cx + 0.03f, foot}, r * 1.2f, r * 0.25f, 0.f, hex(0x000000), 0.32f);
      const bool striped = kind == 2;
      const Color second = hsv(rng.uniform(0.f, 1.f), 0.7f, 0.9f);
      canvas.fill_circle(c, r, 1.f, [&](float x, float y) {
        const float nx = (x - c.x) / r, ny = (y - c.y) / r;
        Color base = colour;
        if (striped && std::sin(std::atan2(ny, nx) * 3.f) > 0.f) base = second;
        return sphere_shade(base, nx, ny);
      });
      if (kind == 1) canvas.stroke({{c.x, c.y - r * 0.85f}, {c.x + r * 0.2f, c.y - r * 1.25f}}, 0.012f, hex(0x4a3020));
    }
  }
}

// ---------------------------------------------------------------------------
void paint_underwater(Canvas& canvas, SceneRng& rng, SceneFacts& facts) {
  const float green = rng.uniform(0.f, 1.f);
  facts.water = Water::underwater;
  add_colour(facts, green > 0.5f ? ColourName::teal : ColourName::blue);
  const Color top = jitter(mix(hex(0x45c4d8), hex(0x62d0b0), green), rng, 0.08f);
  const Color mid = jitter(mix(hex(0x1a78b0), hex(0x1f8a8a), green), rng, 0.08f);
  const Color deep = jitter(hex(0x0b2a5a), rng, 0.12f);
  const Gradient water({{0.f, top}, {0.45f, mid}, {1.f, deep}});
  paint_gradient(canvas, water, 0.f, 1.f);
  // Light rays fanning down from the surface.
  const float sx = rng.uniform(0.2f, 0.8f);
  facts.light = side_light(sx);
  const int rays = rng.range(4, 7);
  for (int i = 0; i < rays; ++i) {
    const float x0 = sx + rng.uniform(-0.25f, 0.25f);
    const float spread = rng.uniform(-0.3f, 0.3f) + (x0 - sx) * 1.5f;
    const float w0 = rng.uniform(0.015f, 0.04f), w1 = w0 * rng.uniform(2.f, 4.f);
    const float len = rng.uniform(0.6f, 0.95f);
    canvas.fill_polygon({{x0 - w0, -0.01f}, {x0 + w0, -0.01f}, {x0 + spread + w1, len}, {x0 + spread - w1, len}}, 1.f,
                        [&](float, float y) {
                          return mix(mix(water.at(y), hex(0xe8fbff), 0.28f), water.at(y), smoothstep(0.f, len, y));
                        });
  }
  canvas.glow({sx, -0.05f}, 0.35f, 0.12f, hex(0xe0fbff), 0.45f);
  // Sandy floor with rocks.
  const Curve floor = rolling_curve(rng, rng.uniform(0.82f, 0.9f), 0.03f, 3, 0.5f, 2.5f);
  const Color sand = mix(jitter(hex(0xd8c08a), rng, 0.08f), mid, 0.3f);
  canvas.fill_polygon(floor.area_below(), 1.f,
                      [&](float x, float y) { return mix(sand, sand * 0.7f, smoothstep(floor.at(x), 1.f, y)); });
  const int rocks = rng.range(1, 4);
  add_counted(facts, "rock", "rocks", rocks);
  for (int i = 0; i < rocks; ++i) {
    const float rx = rng.uniform(0.f, 1.f), rr = rng.uniform(0.04f, 0.09f);
    const Point c{rx, floor.at(rx) + rr * 0.3f};
    const Color stone = mix(hex(0x6e6a5c), deep, 0.35f);
    canvas.fill_ellipse(c, rr * 1.3f, rr * 0.75f, 0.f, 1.f, [&](float x, float y) {
      const float t = 0.5f * ((y - c.y) / (rr * 0.75f) + 0.4f * (x - c.x) / (rr * 1.3f));
      return mix(stone * 1.25f, stone * 0.6f, smoothstep(-0.8f, 0.6f, t));
    });
  }
  // Seaweed swaying upward.
  const int weeds = rng.range(3, 8);
  add_counted(facts, "strand of seaweed", "strands of seaweed", weeds);
  for (int i = 0; i < weeds; ++i) {
    const float wx = rng.uniform(0.f, 1.f), h = rng.uniform(0.2f, 0.5f);
    const float sway = rng.uniform(0.02f, 0.06f), ph = rng.uniform(0.f, 6.f);
    const Color kelp = jitter(rng.chance(0.5) ? hex(0x2f7a3a) : hex(0x6a7a2a), rng, 0.15f);
    std::vector<Point> pts;
    const float base = floor.at(wx) + 0.02f;
    for (int k = 0; k <= 16; ++k) {
      const float t = static_cast<float>(k) / 16.f;
      pts.push_back({wx + sway * std::sin(ph + 6.f * t) * t, base - h * t});
    }
    canvas.stroke(pts, rng.uniform(0.018f, 0.03f), kelp);
  }
  // Fish.
  const int fish = rng.range(2, 6);
  const bool orange_fish = rng.chance(0.6);
  const Color body = jitter(orange_fish ? hex(0xff8a2a) : hex(0xf5d23a), rng, 0.1f);
  add_counted(facts, "fish", "fish", fish);
  facts.objects.back().coloured = true;
  facts.objects.back().colour = orange_fish ? ColourName::orange : ColourName::yellow;
  for (int i = 0; i < fish; ++i) {
    const Point c{rng.uniform(0.1f, 0.9f), rng.uniform(0.2f, 0.7f)};
    const float len = rng.uniform(0.04f, 0.07f);
    const float dir = rng.chance(0.5) ? 1.f : -1.f;
    canvas.fill_polygon({{c.x - dir * len * 0.8f, c.y},
                         {c.x - dir * len * 1.45f, c.y - len * 0.45f},
                         {c.x - dir * len * 1.45f, c.y + len * 0.45f}},
                        body * 0.85f);
    canvas.fill_ellipse(c, len, len * 0.45f, 0.f, 1.f, [&](float x, float y) {
      return sphere_shade(body, (x - c.x) / len * 0.6f, (y - c.y) / (len * 0.45f) * 0.8f);
    });
    canvas.fill_circle({c.x + dir * len * 0.55f, c.y - len * 0.1f}, len * 0.11f, hex(0x101018));
  }
  // Bubbles.
  const int bubbles = rng.range(4, 12);
  facts.features.push_back(kFeatureBubbles);
  const float bx = rng.uniform(0.1f, 0.9f);
  for (int i = 0; i < bubbles; ++i) {
    const Point p{bx + rng.uniform(-0.08f, 0.08f), rng.uniform(0.1f, 0.8f)};
    const float r = rng.uniform(0.007f, 0.016f);
    canvas.fill_circle(p, r, hex(0xe8fbff), 0.35f);
    canvas.glow({p.x - r * 0.3f, p.y - r * 0.3f}, r * 0.4f, hex(0xffffff), 0.5f);
  }
}

}  // namespace kvs::world::detail
