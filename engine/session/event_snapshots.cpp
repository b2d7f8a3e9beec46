#include "engine/session/event_snapshots.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

namespace kvs {

RgbImage to_rgb_image(const at::Tensor& nhwc_u8_single) {
  RgbImage img;
  img.height = static_cast<int>(nhwc_u8_single.size(0));
  img.width = static_cast<int>(nhwc_u8_single.size(1));
  at::Tensor c = nhwc_u8_single.contiguous();
  img.pixels.assign(c.data_ptr<uint8_t>(), c.data_ptr<uint8_t>() + c.numel());
  return img;
}

std::vector<RgbImage> to_rgb_images(const at::Tensor& nhwc_u8) {
  std::vector<RgbImage> images;
  for (int64_t i = 0; i < nhwc_u8.size(0); ++i) images.push_back(to_rgb_image(nhwc_u8[i]));
  return images;
}

RetainedMasks retained_masks(const KvStore& store, int64_t total_positions) {
  RetainedMasks masks;
  masks.n_layer = store.n_layer();
  masks.kv_heads = store.kv_heads();
  masks.positions = total_positions;
  masks.bits.assign(static_cast<size_t>(masks.n_layer * masks.kv_heads * masks.words()), 0);
  for (int64_t l = 0; l < masks.n_layer; ++l) {
    at::Tensor pos = store.positions_tensor(l)[0].contiguous();  // [kv_heads, capacity]
    const int64_t capacity = pos.size(1);
    const int64_t* p = pos.data_ptr<int64_t>();
    for (int64_t h = 0; h < masks.kv_heads; ++h)
      for (int64_t j = 0; j < capacity; ++j) {
        const int64_t position = p[h * capacity + j];
        if (position < 0 || position >= total_positions) continue;
        masks.bits[static_cast<size_t>((l * masks.kv_heads + h) * masks.words() + position / 64)] |=
            uint64_t{1} << (position % 64);
      }
  }
  return masks;
}

std::vector<int64_t> retained_per_layer(const KvStore& store) {
  std::vector<int64_t> out;
  for (int64_t l = 0; l < store.n_layer(); ++l) out.push_back(store.lengths_tensor(l)[0].sum().item<int64_t>());
  return out;
}

}  // namespace kvs
