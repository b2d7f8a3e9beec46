#include "engine/world/scene_facts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "engine/core/errors.h"

namespace kvs::world {

Side side_of(float x) {
  if (x < 1.f / 3.f) return Side::left;
  if (x > 2.f / 3.f) return Side::right;
  return Side::centre;
}

Height height_of(float y) { return y < kHighLightBelowY ? Height::high : Height::low; }

namespace {
Side mirrored_side(Side s) { return s == Side::left ? Side::right : (s == Side::right ? Side::left : Side::centre); }
}  // namespace

SceneFacts mirrored(const SceneFacts& facts) {
  SceneFacts out = facts;
  out.light.x = 1.f - facts.light.x;
  out.light.side = mirrored_side(facts.light.side);
  for (SceneObject& o : out.objects) o.side = mirrored_side(o.side);
  return out;
}

ColourName colour_name(float r, float g, float b) {
  const float v = std::max({r, g, b});
  const float lo = std::min({r, g, b});
  const float s = v > 0.f ? (v - lo) / v : 0.f;
  if (v < 0.18f) return ColourName::black;
  if (s < 0.2f) return v > 0.8f ? ColourName::white : ColourName::grey;
  const float d = v - lo;
  float h;
  if (v == r) h = 60.f * std::fmod((g - b) / d + 6.f, 6.f);
  else if (v == g) h = 60.f * ((b - r) / d + 2.f);
  else h = 60.f * ((r - g) / d + 4.f);
  // Dark oranges and yellows read as brown.
  if (h >= 12.f && h < 45.f && v < 0.5f) return ColourName::brown;
  if (h < 12.f || h >= 345.f) return ColourName::red;
  if (h < 40.f) return ColourName::orange;
  if (h < 70.f) return ColourName::yellow;
  if (h < 165.f) return ColourName::green;
  if (h < 195.f) return ColourName::teal;
  if (h < 260.f) return ColourName::blue;
  if (h < 290.f) return ColourName::purple;
  return ColourName::pink;
}

const char* to_string(TimeOfDay t) {
  switch (t) {
    case TimeOfDay::unspecified: return "unspecified";
    case TimeOfDay::day: return "day";
    case TimeOfDay::dawn: return "dawn";
    case TimeOfDay::evening: return "evening";
    case TimeOfDay::sunset: return "sunset";
    case TimeOfDay::dusk: return "dusk";
    case TimeOfDay::night: return "night";
  }
  return "?";
}

const char* to_string(Side s) {
  switch (s) {
    case Side::left: return "left";
    case Side::centre: return "centre";
    case Side::right: return "right";
  }
  return "?";
}

const char* to_string(Height h) { return h == Height::high ? "high" : "low"; }

namespace {
constexpr const char* kColourWords[] = {"red",    "orange", "yellow", "green", "teal", "blue",
                                        "purple", "pink",   "brown",  "white", "grey", "black"};
}

const char* to_string(ColourName c) { return kColourWords[static_cast<int>(c)]; }

const char* to_string(LightKind k) {
  switch (k) {
    case LightKind::none: return "none";
    case LightKind::sun: return "sun";
    case LightKind::moon: return "moon";
  }
  return "?";
}

const char* to_string(Water w) {
  switch (w) {
    case Water::none: return "none";
    case Water::sea: return "sea";
    case Water::lake: return "lake";
    case Water::underwater: return "underwater";
  }
  return "?";
}

ColourName parse_colour_name(const std::string& word) {
  for (int i = 0; i < static_cast<int>(std::size(kColourWords)); ++i)
    if (word == kColourWords[i]) return static_cast<ColourName>(i);
  std::string all;
  for (const char* w : kColourWords) all += (all.empty() ? "" : ", ") + std::string(w);
  throw InvalidArgumentError("unknown colour '" + word + "' (colours: " + all + ")");
}

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string number(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", static_cast<double>(v));
  return buf;
}

}  // namespace

std::string facts_json(const SceneFacts& f) {
  std::string j = "{\"class_id\": " + std::to_string(f.class_id) + ", \"seed\": " + std::to_string(f.seed);
  j += ", \"time\": " + quoted(to_string(f.time));
  j += ", \"light\": {\"kind\": " + quoted(to_string(f.light.kind));
  if (f.light.kind != LightKind::none) {
    j += std::string(", \"disc\": ") + (f.light.disc ? "true" : "false") + ", \"x\": " + number(f.light.x);
    j += ", \"side\": " + quoted(to_string(f.light.side));
    if (f.light.disc) j += ", \"y\": " + number(f.light.y) + ", \"height\": " + quoted(to_string(f.light.height));
    if (f.light.kind == LightKind::moon) j += std::string(", \"crescent\": ") + (f.light.crescent ? "true" : "false");
  }
  j += "}, \"colours\": [";
  for (std::size_t i = 0; i < f.colours.size(); ++i) j += (i ? ", " : "") + quoted(to_string(f.colours[i]));
  j += "], \"clouds\": " + std::to_string(f.clouds);
  j += std::string(", \"mist\": ") + (f.mist ? "true" : "false");
  j += ", \"water\": " + quoted(to_string(f.water));
  j += ", \"objects\": [";
  for (std::size_t i = 0; i < f.objects.size(); ++i) {
    const SceneObject& o = f.objects[i];
    j += (i ? ", " : "") + std::string("{\"noun\": ") + quoted(o.noun) + ", \"count\": " + std::to_string(o.count);
    if (o.coloured) j += ", \"colour\": " + quoted(to_string(o.colour));
    if (o.placed) j += ", \"side\": " + quoted(to_string(o.side));
    j += "}";
  }
  j += "], \"features\": [";
  for (std::size_t i = 0; i < f.features.size(); ++i) j += (i ? ", " : "") + quoted(f.features[i]);
  j += "]";
  if (!f.pattern.empty()) j += ", \"pattern\": " + quoted(f.pattern);
  return j + "}";
}

}  // namespace kvs::world
