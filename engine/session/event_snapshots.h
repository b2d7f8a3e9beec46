#pragma once
// Torch-side helpers that turn engine state into the torch-free event types of
// generation_events.h; shared by the families' session drivers.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/image/rgb_image.h"
#include "engine/session/generation_events.h"

namespace kvs {

// One uint8 [H, W, 3] image tensor -> RgbImage.
RgbImage to_rgb_image(const at::Tensor& nhwc_u8_single);
// uint8 [B, H, W, 3] -> one RgbImage per batch row.
std::vector<RgbImage> to_rgb_images(const at::Tensor& nhwc_u8);

// Bitsets of the positions retained for batch row 0, per (layer, KV head), over
// the sequence positions [0, total_positions).
RetainedMasks retained_masks(const KvStore& store, int64_t total_positions);

// Image 0's retained entries per layer, summed over KV heads.
std::vector<int64_t> retained_per_layer(const KvStore& store);

}  // namespace kvs
