#include "engine/world/scene_measures.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "engine/core/errors.h"
#include "engine/world/scene_world.h"

namespace kvs::world {

namespace {

// Mean luminance (0..255) thresholds, set on world pictures at 32 and 64 px: night
// skies measure 21-39, a city at dusk 53-75, sunsets 83 and up, daylight 109 and up.
constexpr float kDarkBelow = 46.f;
constexpr float kDimBelow = 80.f;

float luma(const uint8_t* p) { return 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2]; }

void check_image(const RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 3)
    throw InvalidArgumentError("a picture to measure must be a non-empty RGB image");
}

std::size_t pixel_count(const RgbImage& image) {
  return static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height);
}

}  // namespace

const char* to_string(Lightness l) {
  switch (l) {
    case Lightness::bright: return "bright";
    case Lightness::dim: return "dim";
    case Lightness::dark: return "dark";
  }
  return "?";
}

Lightness measure_lightness(const RgbImage& image) {
  check_image(image);
  const std::size_t n = pixel_count(image);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += luma(&image.pixels[i * 3]);
  const double mean = sum / static_cast<double>(n);
  return mean < kDarkBelow ? Lightness::dark : (mean < kDimBelow ? Lightness::dim : Lightness::bright);
}

bool matches_time_of_day(const RgbImage& image, TimeOfDay asked) {
  const Lightness seen = measure_lightness(image);
  switch (asked) {
    case TimeOfDay::night: return seen == Lightness::dark;
    case TimeOfDay::dusk: return seen != Lightness::bright;
    case TimeOfDay::sunset: return seen != Lightness::dark;
    case TimeOfDay::day:
    case TimeOfDay::dawn:
    case TimeOfDay::evening: return seen == Lightness::bright;
    case TimeOfDay::unspecified: break;
  }
  throw InvalidArgumentError("a picture's light can only be judged for a time of day that is specified");
}

namespace {

// Box blurs of the luminance, from a summed-area table.
class LumaBlur {
 public:
  explicit LumaBlur(const RgbImage& image) : w_(image.width), h_(image.height) {
    sat_.assign(static_cast<std::size_t>(w_ + 1) * static_cast<std::size_t>(h_ + 1), 0.0);
    for (int y = 0; y < h_; ++y)
      for (int x = 0; x < w_; ++x)
        at(x + 1, y + 1) = luma(&image.pixels[(static_cast<std::size_t>(y) * w_ + x) * 3]) + at(x, y + 1) +
                           at(x + 1, y) - at(x, y);
  }
  // Mean luminance of the box of radius r around (x, y), clipped to the picture.
  float mean(int x, int y, int r) {
    const int x0 = std::max(0, x - r), x1 = std::min(w_, x + r + 1), y0 = std::max(0, y - r),
              y1 = std::min(h_, y + r + 1);
    return static_cast<float>((at(x1, y1) - at(x0, y1) - at(x1, y0) + at(x0, y0)) / ((x1 - x0) * (y1 - y0)));
  }

 private:
  double& at(int x, int y) { return sat_[static_cast<std::size_t>(y) * (w_ + 1) + x]; }
  int w_, h_;
  std::vector<double> sat_;
};

}  // namespace

namespace {

// The centre of the bright plateau (within 8 levels of the top, a disc or glow
// clipped to white is flat on top) of the luminance blurred at radius r, near (x, y).
std::pair<double, double> plateau_centre(LumaBlur& blur, int w, int h, int x, int y, int r) {
  const float top = blur.mean(x, y, r) - 8.f;
  double sw = 0, sx = 0, sy = 0;
  for (int j = std::max(0, y - 2 * r); j < std::min(h, y + 2 * r + 1); ++j)
    for (int i = std::max(0, x - 2 * r); i < std::min(w, x + 2 * r + 1); ++i) {
      const float v = blur.mean(i, j, r) - top;
      if (v <= 0.f) continue;
      sw += v;
      sx += v * (i + 0.5);
      sy += v * (j + 0.5);
    }
  return {sx / sw / w, sy / sw / h};
}

}  // namespace

BrightSpot brightest_spot(const RgbImage& image) {
  check_image(image);
  const int w = image.width, h = image.height;
  LumaBlur blur(image);
  // Two scales. A wide blur finds the glow around a sun or moon, and its centre
  // gives the side: a bright horizon or a lit streak of cloud can match a disc
  // pixel for pixel, but not its glow. A narrow blur then finds the disc inside the
  // glow for the height (a glow spreads down onto a bright horizon).
  const int wide = std::max(1, static_cast<int>(std::lround(std::min(w, h) / 10.0)));
  const int narrow = std::max(1, static_cast<int>(std::lround(std::min(w, h) / 20.0)));
  float best = -1.f;
  int cx = 0, cy = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if (const float v = blur.mean(x, y, wide); v > best) best = v, cx = x, cy = y;
  best = -1.f;
  int bx = cx, by = cy;
  for (int y = std::max(0, cy - wide); y < std::min(h, cy + wide + 1); ++y)
    for (int x = std::max(0, cx - wide); x < std::min(w, cx + wide + 1); ++x)
      if (const float v = blur.mean(x, y, narrow); v > best) best = v, bx = x, by = y;
  return {static_cast<float>(plateau_centre(blur, w, h, cx, cy, wide).first),
          static_cast<float>(plateau_centre(blur, w, h, bx, by, narrow).second)};
}

bool matches_light_side(const RgbImage& image, Side asked) { return side_of(brightest_spot(image).x) == asked; }

bool matches_light_height(const RgbImage& image, Height asked) { return height_of(brightest_spot(image).y) == asked; }

namespace {

// Hue ranges in degrees of the hue families, as colour_name draws them.
struct HueRange {
  float from, to;  // from > to wraps through 0
};
constexpr HueRange kHueRanges[] = {{345.f, 12.f},  {12.f, 40.f},   {40.f, 70.f},   {70.f, 165.f},
                                   {165.f, 195.f}, {195.f, 260.f}, {260.f, 290.f}, {290.f, 345.f}};
constexpr float kHueTolerance = 6.f;

bool in_range(float h, HueRange r) {
  const float from = r.from - kHueTolerance, to = r.to + kHueTolerance;
  auto norm = [](float a) { return std::fmod(a + 720.f, 360.f); };
  const float f = norm(from), t = norm(to);
  return f <= t ? (h >= f && h < t) : (h >= f || h < t);
}

}  // namespace

float colour_fraction(const RgbImage& image, ColourName colour) {
  check_image(image);
  const std::size_t n = pixel_count(image);
  const int family = static_cast<int>(colour);
  const bool hue_family = colour <= ColourName::pink;
  std::size_t hits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const uint8_t* p = &image.pixels[i * 3];
    const float r = p[0] / 255.f, g = p[1] / 255.f, b = p[2] / 255.f;
    if (!hue_family) {
      hits += colour_name(r, g, b) == colour;
      continue;
    }
    const float v = std::max({r, g, b}), lo = std::min({r, g, b});
    if (v < 0.18f || (v - lo) < 0.2f * v) continue;  // black or unsaturated: no hue
    const float d = v - lo;
    float h;
    if (v == r) h = 60.f * std::fmod((g - b) / d + 6.f, 6.f);
    else if (v == g) h = 60.f * ((b - r) / d + 2.f);
    else h = 60.f * ((r - g) / d + 4.f);
    hits += in_range(h, kHueRanges[family]);
  }
  return static_cast<float>(hits) / static_cast<float>(n);
}

bool matches_colour(const RgbImage& image, ColourName asked) {
  return colour_fraction(image, asked) >= kColourMinFraction;
}

const char* to_string(CloudCover c) { return c == CloudCover::clear ? "clear" : "cloudy"; }

namespace {
// How much whiter than its row's sky a pixel must be (smallest channel, 0..255),
// and how grey (largest minus smallest channel over the largest) to count as cloud.
constexpr int kCloudWhiteMargin = 40;
constexpr int kCloudBandPercent = 25;
constexpr float kCloudMaxSaturation = 0.3f;
}  // namespace

float cloud_fraction(const RgbImage& image) {
  check_image(image);
  const int w = image.width, rows = std::max(1, image.height * kCloudBandPercent / 100);
  std::vector<int> whiteness(static_cast<std::size_t>(w)), sorted;  // sorted: one row's copy, reused
  std::size_t hits = 0;
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = &image.pixels[(static_cast<std::size_t>(y) * w + x) * 3];
      whiteness[static_cast<std::size_t>(x)] = std::min({p[0], p[1], p[2]});
    }
    sorted = whiteness;
    std::nth_element(sorted.begin(), sorted.begin() + w / 4, sorted.end());
    const int sky = sorted[static_cast<std::size_t>(w / 4)];
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = &image.pixels[(static_cast<std::size_t>(y) * w + x) * 3];
      const int hi = std::max({p[0], p[1], p[2]}), lo = whiteness[static_cast<std::size_t>(x)];
      hits += lo >= sky + kCloudWhiteMargin && hi > 0 && static_cast<float>(hi - lo) <= kCloudMaxSaturation * hi;
    }
  }
  return static_cast<float>(hits) / static_cast<float>(static_cast<std::size_t>(rows) * static_cast<std::size_t>(w));
}

bool matches_cloud_cover(const RgbImage& image, CloudCover asked) {
  const bool cloudy = cloud_fraction(image) >= kCloudMinFraction;
  return cloudy == (asked == CloudCover::cloudy);
}

std::optional<CloudCover> cloud_cover_of(const SceneFacts& facts) {
  if (facts.clouds < 0) return std::nullopt;
  return facts.clouds == 0 ? CloudCover::clear : CloudCover::cloudy;
}

namespace {
bool is_one_of(int class_id, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (class_id == scene_class_id(name)) return true;
  return false;
}
}  // namespace

bool light_side_measurable(int class_id) {
  return is_one_of(class_id, {"sunset_sea", "night_sky", "desert", "forest"});
}

bool light_height_measurable(int class_id) { return is_one_of(class_id, {"sunset_sea", "night_sky", "forest"}); }

bool colour_measurable(int class_id) { return is_one_of(class_id, {"tiling"}); }

bool clouds_measurable(int class_id) { return is_one_of(class_id, {"mountains", "lake", "hills", "flower_fields"}); }

}  // namespace kvs::world
