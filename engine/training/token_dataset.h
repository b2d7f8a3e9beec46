#pragma once
// World images as token sequences: a trained tokenizer's ids of each image and its
// class, as the generators train on them — LlamaGen's raster codes (upstream
// extracts them once too, autoregressive/train/extract_codes_c2i.py) or VAR's
// multi-scale ids flattened scale by scale. Cached in the generator's run folder,
// keyed by the tokenizer checkpoint that made them.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>

#include "engine/training/world_dataset.h"

namespace kvs::training {

struct TokenSet {
  at::Tensor codes;   // [N, grid*grid] int64, CPU
  at::Tensor labels;  // [N] int64, CPU
  int64_t size() const { return codes.defined() ? codes.size(0) : 0; }
};

// A tokenizer: model input [B, 3, H, W] in [-1, 1] on its device -> ids [B, T] int64.
struct ImageTokenizer {
  std::function<at::Tensor(const at::Tensor& input)> encode;
  at::Device device = at::kCPU;
};

TokenSet tokenize_images(const ImageTokenizer& tokenizer, const WorldImageSet& images, int64_t batch_size = 64);

// As tokenize_images, re-using `cache_path` when it was made from the same
// images by the same tokenizer checkpoint (`tokenizer_id`, e.g. its weights file).
TokenSet tokenize_images_cached(const ImageTokenizer& tokenizer, const WorldImageSet& images,
                                const std::string& cache_path, const std::string& tokenizer_id,
                                int64_t batch_size = 64);

}  // namespace kvs::training
