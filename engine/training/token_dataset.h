#pragma once
// World images as LlamaGen token sequences: the trained tokenizer's codes of each
// image (raster order) and its class, as the GPT trains on them (upstream
// extracts codes once too, autoregressive/train/extract_codes_c2i.py). Cached in
// the GPT run folder, keyed by the tokenizer checkpoint that made them.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "engine/training/llamagen/vq_model.h"
#include "engine/training/world_dataset.h"

namespace kvs::training {

struct TokenSet {
  at::Tensor codes;   // [N, grid*grid] int64, CPU
  at::Tensor labels;  // [N] int64, CPU
  int64_t size() const { return codes.defined() ? codes.size(0) : 0; }
};

TokenSet tokenize_images(const VqModel& vq, const WorldImageSet& images, int64_t batch_size = 64);

// As tokenize_images, re-using `cache_path` when it was made from the same
// images by the same tokenizer checkpoint (`tokenizer_id`, e.g. its weights file).
TokenSet tokenize_images_cached(const VqModel& vq, const WorldImageSet& images, const std::string& cache_path,
                                const std::string& tokenizer_id, int64_t batch_size = 64);

}  // namespace kvs::training
