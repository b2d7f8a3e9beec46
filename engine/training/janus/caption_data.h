#pragma once
// The world's pictures with their captions, as the text-to-image demo model trains
// and is evaluated on them: caption k of the picture (class, seed) is
// world::scene_caption(scene_facts(class, seed), caption_seed(seed, k), split).
// Training uses the train split of the caption grammar only; evaluation reads
// held-out pictures in both splits, so the gates cover wordings the model never read.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/training/world_dataset.h"
#include "engine/world/scene_captions.h"

namespace kvs::training {

// The caption seed of caption k of a picture: different pictures draw different
// phrasings and word orders (a shared seed per k would tie phrasings to k).
uint64_t caption_seed(uint64_t picture_seed, int64_t k);

std::string world_item_caption(const WorldItem& item, int64_t k, world::CaptionSplit split);

// Captions 0..per_item-1 of every item, item-major (caption k of item i at i * per_item + k).
// `mirrored`: captions of the pictures mirrored left-right (world::mirrored facts,
// the same caption seeds, so each differs from the unmirrored caption k only in
// its sides).
std::vector<std::string> world_item_captions(const std::vector<WorldItem>& items, int64_t per_item,
                                             world::CaptionSplit split, bool mirrored = false);

}  // namespace kvs::training
