#pragma once
// One painter per scene class (internal to engine/world). Each paints the whole
// canvas from the random stream it is given and records what it drew in `facts`
// (scene_facts.h); scene_world.cpp maps labels to them.
#include "engine/world/scene_canvas.h"
#include "engine/world/scene_facts.h"
#include "engine/world/scene_rng.h"

namespace kvs::world::detail {

// Landscapes (scene_landscapes.cpp).
void paint_sunset_sea(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_mountains(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_lake(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_night_sky(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_forest(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_desert(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_hills(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_flower_fields(Canvas& canvas, SceneRng& rng, SceneFacts& facts);

// Cities, patterns, objects, water (scene_others.cpp).
void paint_city_dusk(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_tiling(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_still_life(Canvas& canvas, SceneRng& rng, SceneFacts& facts);
void paint_underwater(Canvas& canvas, SceneRng& rng, SceneFacts& facts);

}  // namespace kvs::world::detail
