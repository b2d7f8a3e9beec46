#include "engine/training/janus/caption_data.h"

#include "engine/world/scene_world.h"

namespace kvs::training {

uint64_t caption_seed(uint64_t picture_seed, int64_t k) {
  // Room for 4096 captions per picture before two pictures' seeds could meet.
  return picture_seed * 4096 + static_cast<uint64_t>(k);
}

std::string world_item_caption(const WorldItem& item, int64_t k, world::CaptionSplit split) {
  const world::SceneFacts facts = world::scene_facts(static_cast<int>(item.class_id), item.seed);
  return world::scene_caption(facts, caption_seed(item.seed, k), split).text;
}

std::vector<std::string> world_item_captions(const std::vector<WorldItem>& items, int64_t per_item,
                                             world::CaptionSplit split, bool mirrored) {
  std::vector<std::string> out;
  out.reserve(items.size() * static_cast<size_t>(per_item));
  for (const WorldItem& item : items) {
    world::SceneFacts facts = world::scene_facts(static_cast<int>(item.class_id), item.seed);
    if (mirrored) facts = world::mirrored(facts);
    for (int64_t k = 0; k < per_item; ++k)
      out.push_back(world::scene_caption(facts, caption_seed(item.seed, k), split).text);
  }
  return out;
}

}  // namespace kvs::training
