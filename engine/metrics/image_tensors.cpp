#include "engine/metrics/image_tensors.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cstring>

#include "engine/core/errors.h"

namespace kvs {

at::Tensor u8_images_to_input(const at::Tensor& pixels_nhwc, at::Device device) {
  return pixels_nhwc.to(device).permute({0, 3, 1, 2}).to(at::kFloat).div(127.5).sub(1.0).contiguous();
}

at::Tensor rgb_images_to_tensor(const std::vector<RgbImage>& images) {
  if (images.empty()) return at::empty({0, 0, 0, 3}, at::TensorOptions().dtype(at::kByte));
  const int h = images[0].height, w = images[0].width;
  at::Tensor out = at::empty({static_cast<int64_t>(images.size()), h, w, 3}, at::TensorOptions().dtype(at::kByte));
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].height != h || images[i].width != w || images[i].pixels.size() != static_cast<size_t>(h) * w * 3)
      throw InvalidArgumentError("images of different sizes cannot form one batch");
    std::memcpy(out[static_cast<int64_t>(i)].data_ptr<uint8_t>(), images[i].pixels.data(), images[i].pixels.size());
  }
  return out;
}

RgbImage tensor_to_rgb_image(const at::Tensor& pixels_hwc) {
  at::Tensor t = pixels_hwc.to(at::kCPU, at::kByte).contiguous();
  RgbImage img;
  img.height = static_cast<int>(t.size(0));
  img.width = static_cast<int>(t.size(1));
  img.pixels.assign(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + t.numel());
  return img;
}

}  // namespace kvs
