#pragma once
// A labelled contact sheet of the procedural world: one row per class, the class
// name on the left, `per_class` samples to the right. Used by `kvstudio-cli world`
// and the README picture; torch-free.
#include <cstdint>
#include <vector>

#include "engine/image/rgb_image.h"

namespace kvs::world {

struct SceneGridOptions {
  int size_px = 128;         // each sample is size_px × size_px
  int per_class = 6;         // samples per row
  uint64_t seed = 0;         // sample j of every row uses seed + j
  std::vector<int> classes;  // rows, in this order; empty = every class
};

// Throws kvs::InvalidArgumentError for an unknown class, a bad size or per_class
// outside 1..64.
RgbImage render_scene_grid(const SceneGridOptions& options);

}  // namespace kvs::world
