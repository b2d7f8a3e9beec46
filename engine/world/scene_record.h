#pragma once
// Helpers the painters use to record what they draw (internal to engine/world):
// each takes the value a painter has just drawn with, so the facts cannot drift
// from the pixels.
#include <algorithm>
#include <string>

#include "engine/world/scene_canvas.h"
#include "engine/world/scene_facts.h"

namespace kvs::world::detail {

inline ColourName name_of(Color c) { return colour_name(clamp01(c.r), clamp01(c.g), clamp01(c.b)); }

// A sun or moon disc (or glow) centred at (x, y).
inline SceneLight disc_light(LightKind kind, float x, float y) {
  SceneLight l;
  l.kind = kind;
  l.disc = true;
  l.x = x;
  l.y = y;
  l.side = side_of(x);
  l.height = height_of(y);
  return l;
}

// Sunlight seen only by its effect (lit faces, rays), coming from around x.
inline SceneLight side_light(float x) {
  SceneLight l;
  l.kind = LightKind::sun;
  l.x = x;
  l.side = side_of(x);
  return l;
}

inline void add_colour(SceneFacts& f, ColourName c) {
  if (std::find(f.colours.begin(), f.colours.end(), c) == f.colours.end()) f.colours.push_back(c);
}

inline void add_placed(SceneFacts& f, const std::string& noun, const std::string& plural, float x) {
  SceneObject o;
  o.noun = noun;
  o.plural = plural;
  o.placed = true;
  o.side = side_of(x);
  f.objects.push_back(o);
}

inline void add_counted(SceneFacts& f, const std::string& noun, const std::string& plural, int count) {
  SceneObject o;
  o.noun = noun;
  o.plural = plural;
  o.count = count;
  f.objects.push_back(o);
}

}  // namespace kvs::world::detail
