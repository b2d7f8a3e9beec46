#pragma once
// Images of the procedural world (engine/world) as training and evaluation data.
// An image is named by (class, seed) alone, so a data set is a list of those
// pairs; the pixels are rendered once and kept in memory as uint8 (and, when a
// cache path is given, in a safetensors file that later runs re-use after a
// spot check that the world still renders the same pixels).
//
// Held-out data never overlaps training data: training seeds lie in
// [0, kHeldOutSeedBase), held-out seeds in [kHeldOutSeedBase, 2 * kHeldOutSeedBase).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/metrics/image_tensors.h"
#include "engine/world/scene_world.h"

namespace kvs::training {

enum class WorldSplit { Train, HeldOut };
inline constexpr uint64_t kHeldOutSeedBase = world::kHeldOutSeedBase;

struct WorldItem {
  int64_t class_id = 0;
  uint64_t seed = 0;
};

// `per_class` items of each of `num_classes` classes, interleaved by class
// (item i: class i % C, seed split_base + first_index + i / C).
std::vector<WorldItem> world_items(WorldSplit split, int64_t per_class, int64_t num_classes, uint64_t first_index = 0);
// "[first, end)" for provenance and reports.
std::string seed_range_text(uint64_t first, uint64_t end);
// The world's class count and names (label order).
int64_t world_class_count();
std::vector<std::string> world_class_names();

class WorldImageSet {
 public:
  // Renders every item at size_px × size_px with `threads` worker threads.
  static WorldImageSet render(std::vector<WorldItem> items, int size_px, int threads = 1);
  // As render(), through `cache_path` (re-used when it holds exactly these items
  // and a re-rendered sample still matches; rewritten otherwise).
  static WorldImageSet render_cached(std::vector<WorldItem> items, int size_px, const std::string& cache_path,
                                     int threads = 1);

  int64_t size() const { return static_cast<int64_t>(items_.size()); }
  int image_size() const { return size_px_; }
  const std::vector<WorldItem>& items() const { return items_; }
  const at::Tensor& pixels() const { return pixels_; }  // uint8 [N, H, W, 3], CPU
  at::Tensor labels() const;                            // int64 [N], CPU

  // The same items with every picture mirrored left-right (world::mirrored gives
  // their facts).
  WorldImageSet mirrored() const;

  // Model input for the rows `indices` (int64): float32 [B, 3, H, W] in [-1, 1]
  // (LlamaGen's Normalize(0.5, 0.5)) on `device`; rows with flip[i] true are
  // mirrored left-right (flip may be undefined).
  at::Tensor batch(const at::Tensor& indices, at::Device device, const at::Tensor& flip = {}) const;

 private:
  std::vector<WorldItem> items_;
  int size_px_ = 0;
  at::Tensor pixels_;
};

}  // namespace kvs::training
