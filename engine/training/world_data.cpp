#include "engine/training/world_data.h"

#include <chrono>
#include <filesystem>

#include "engine/core/logging.h"

namespace kvs::training {

WorldImageSet load_world_split(const std::string& work_dir, WorldSplit split, int64_t per_class, int size_px,
                               int threads) {
  const std::string name = std::string("world-") + (split == WorldSplit::Train ? "train" : "heldout") + "-" +
                           std::to_string(size_px) + "px-" + std::to_string(per_class) + ".safetensors";
  const std::string path = (std::filesystem::path(work_dir) / "data" / name).string();
  const auto t0 = std::chrono::steady_clock::now();
  WorldImageSet set = WorldImageSet::render_cached(world_items(split, per_class, world_class_count()), size_px, path,
                                                   threads);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  module_logger("train").info("world images: " + std::to_string(set.size()) + " " +
                              (split == WorldSplit::Train ? "training" : "held-out") + " images of " +
                              std::to_string(size_px) + " px ready in " + std::to_string(s) + " s");
  return set;
}

}  // namespace kvs::training
