#include "engine/world/scene_world.h"

#include <algorithm>
#include <string>

#include "engine/core/errors.h"
#include "engine/world/scene_canvas.h"
#include "engine/world/scene_painters.h"
#include "engine/world/scene_rng.h"

namespace kvs::world {

namespace {

using Painter = void (*)(detail::Canvas&, detail::SceneRng&, SceneFacts&);

struct ClassEntry {
  SceneClass info;
  Painter paint;
};

// Label order is part of the data contract (trained bundles store class ids):
// append new classes at the end, never reorder.
const std::vector<ClassEntry>& entries() {
  static const std::vector<ClassEntry> kEntries = {
      {{"sunset_sea", "the sun setting over the sea: warm sky gradient, cloud streaks, a glittering sun path"},
       &detail::paint_sunset_sea},
      {{"mountains", "snow-capped mountain ranges fading into blue haze under a daytime sky"},
       &detail::paint_mountains},
      {{"lake", "a still lake mirroring a wooded shore, hills and sky"}, &detail::paint_lake},
      {{"night_sky", "a starry night with the moon, often the Milky Way, over black hills"}, &detail::paint_night_sky},
      {{"forest", "rows of conifers receding into mist"}, &detail::paint_forest},
      {{"desert", "sand dunes with sharp sunlit crests under a pale sky and a high sun"}, &detail::paint_desert},
      {{"city_dusk", "a city skyline at dusk with lit windows against an orange-to-violet sky"},
       &detail::paint_city_dusk},
      {{"tiling", "a geometric tiling: checkers, diamonds, stripes, triangles, hexagons or rings"},
       &detail::paint_tiling},
      {{"still_life", "vases, fruit and balls on a table against a softly lit wall"}, &detail::paint_still_life},
      {{"hills", "rolling green hills under a blue sky with white clouds"}, &detail::paint_hills},
      {{"underwater", "under the sea: light rays, a sandy floor, seaweed, fish and bubbles"},
       &detail::paint_underwater},
      {{"flower_fields", "rows of coloured flowers running to the horizon, a tree line, sometimes a windmill"},
       &detail::paint_flower_fields},
  };
  return kEntries;
}

// Supersampling: at least 2× and at least 256 px, so small images are area-averaged
// from a detailed drawing rather than aliased.
int canvas_pixels(int size_px) {
  const int factor = std::max(2, (256 + size_px - 1) / size_px);
  return size_px * factor;
}

void check_class(int class_id) {
  const int n = static_cast<int>(entries().size());
  if (class_id < 0 || class_id >= n)
    throw InvalidArgumentError(std::string("scene class ") + std::to_string(class_id) +
                               " does not exist: the procedural world has " + std::to_string(n) + " classes (0.." +
                               std::to_string(n - 1) + ")");
}

// Paints (class, seed) on `canvas` and returns what was drawn.
SceneFacts paint(int class_id, uint64_t seed, detail::Canvas& canvas) {
  // One independent stream per (class, seed) pair.
  detail::SceneRng rng(
      detail::splitmix64_mix(seed ^ detail::splitmix64_mix(0x5CE7E0000ull + static_cast<uint64_t>(class_id))));
  SceneFacts facts;
  facts.class_id = class_id;
  facts.seed = seed;
  entries()[static_cast<std::size_t>(class_id)].paint(canvas, rng, facts);
  return facts;
}

}  // namespace

const std::vector<SceneClass>& scene_classes() {
  static const std::vector<SceneClass> kClasses = [] {
    std::vector<SceneClass> v;
    for (const ClassEntry& e : entries()) v.push_back(e.info);
    return v;
  }();
  return kClasses;
}

int scene_class_id(const std::string& name) {
  const auto& classes = scene_classes();
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (classes[i].name == name) return static_cast<int>(i);
  return -1;
}

RgbImage render_scene(int class_id, uint64_t seed, int size_px) {
  return render_scene_with_facts(class_id, seed, size_px).image;
}

RenderedScene render_scene_with_facts(int class_id, uint64_t seed, int size_px) {
  check_class(class_id);
  if (size_px < kMinSceneSize || size_px > kMaxSceneSize)
    throw InvalidArgumentError(std::string("scene size ") + std::to_string(size_px) + " px is out of range: expected " +
                               std::to_string(kMinSceneSize) + ".." + std::to_string(kMaxSceneSize) + " px");
  detail::Canvas canvas(canvas_pixels(size_px));
  RenderedScene out;
  out.facts = paint(class_id, seed, canvas);
  out.image = canvas.downsample(size_px);
  return out;
}

SceneFacts scene_facts(int class_id, uint64_t seed) {
  check_class(class_id);
  // The random draws, hence the facts, do not depend on the canvas size (the layout
  // contract): a small canvas gives the same facts as the full drawing, cheaply.
  detail::Canvas canvas(kMinSceneSize);
  return paint(class_id, seed, canvas);
}

}  // namespace kvs::world
