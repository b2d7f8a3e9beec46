#pragma once
// The procedural image world the demo models are trained on: a deterministic,
// seeded generator of class-conditional scenes whose structure spans the whole
// picture. Torch-free and Qt-free: the training tool, the CLI and the tests use
// it through these plain types.
//
// Determinism contract: render_scene(c, seed, size) returns the same pixels on
// every run (no global RNG, no threads, no time, no standard-library
// distributions: our own splitmix64 stream per (class, seed)), so datasets are
// reproducible from (class, seed) pairs alone. Layout and colours are decided by
// integer random draws and are identical everywhere; across machines, pixel values
// could only differ where libm's exp/sin round differently in the last bit (an
// 8-bit level at most, rarely). Drawing is OpenCV's integer anti-aliased
// rasteriser plus our own float shading and an exact box filter.
//
// Changing what a class draws (or the order of its random draws) changes the data
// set: bump kSceneWorldVersion (bundles trained on the world record it), update
// the stability test (SceneWorld.PicturesAreStable) and retrain the demo models.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/image/rgb_image.h"
#include "engine/world/scene_facts.h"

namespace kvs::world {

// The version of the world's pictures (see the determinism contract above).
inline constexpr int kSceneWorldVersion = 1;

struct SceneClass {
  std::string name;         // short id used in bundles and CLI, e.g. "mountains"
  std::string description;  // one sentence for tooltips / README
};

// The classes, in label order (label i = scene_classes()[i]). At least 10.
const std::vector<SceneClass>& scene_classes();

// The label of the class named `name` ("lake"), or -1 if no class has that name.
int scene_class_id(const std::string& name);

// Seeds at and above this value are held out: the training tool never trains on
// them, and evaluation (kvstudio-train evaluate, bench's demo-FID) draws from them.
inline constexpr uint64_t kHeldOutSeedBase = 1'000'000'000ULL;

inline constexpr int kMinSceneSize = 16;
inline constexpr int kMaxSceneSize = 2048;

// Renders scene `class_id` for `seed` as a size_px × size_px RGB image. The layout,
// colours and lighting vary with the seed; the class stays recognisable at any
// size from 32 px up (drawn supersampled — at least 2× and at least 256 px — and
// area-downsampled, so small sizes are anti-aliased, not aliased). The layout does
// not depend on size_px: the same (class, seed) at 64 px is the 256 px picture
// scaled down. Throws kvs::InvalidArgumentError for an unknown class or size_px
// outside [kMinSceneSize, kMaxSceneSize].
RgbImage render_scene(int class_id, uint64_t seed, int size_px);

// render_scene's picture together with the facts of what it drew (scene_facts.h),
// recorded by the painter from the values it drew with. The pixels are those of
// render_scene; the facts do not depend on size_px.
struct RenderedScene {
  RgbImage image;
  SceneFacts facts;
};
RenderedScene render_scene_with_facts(int class_id, uint64_t seed, int size_px);

// The facts of (class_id, seed) alone: the same random draws as render_scene, on a
// tiny canvas. Throws kvs::InvalidArgumentError for an unknown class.
SceneFacts scene_facts(int class_id, uint64_t seed);

}  // namespace kvs::world
