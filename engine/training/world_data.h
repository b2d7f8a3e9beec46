#pragma once
// The rendered world images a run trains or evaluates on, cached under WORK/data
// so that the tokenizer, the classifier and the GPT share one rendering.
#include <cstdint>
#include <string>

#include "engine/training/world_dataset.h"

namespace kvs::training {

// WORK/data/world-<split>-<size>px-<per_class>.safetensors through WorldImageSet::render_cached.
WorldImageSet load_world_split(const std::string& work_dir, WorldSplit split, int64_t per_class, int size_px,
                               int threads);

}  // namespace kvs::training
