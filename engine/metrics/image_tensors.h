#pragma once
// Conversions between the engine's 8-bit images and model tensors. The model
// side is LlamaGen's: float32 NCHW in [-1, 1] (transforms.Normalize(0.5, 0.5)).
#include <ATen/core/Tensor.h>

#include <vector>

#include "engine/image/rgb_image.h"

namespace kvs {

// uint8 [N, H, W, 3] (any device) -> float32 [N, 3, H, W] in [-1, 1] on `device`.
at::Tensor u8_images_to_input(const at::Tensor& pixels_nhwc, at::Device device);
// RgbImages of one size -> uint8 [N, H, W, 3] (CPU).
at::Tensor rgb_images_to_tensor(const std::vector<RgbImage>& images);
// uint8 [H, W, 3] -> RgbImage.
RgbImage tensor_to_rgb_image(const at::Tensor& pixels_hwc);

}  // namespace kvs
