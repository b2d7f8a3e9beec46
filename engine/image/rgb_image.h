#pragma once
// A plain 8-bit RGB image, the engine's image type at its public boundary (the UI
// and CLI never see tensors).
#include <cstdint>
#include <vector>

namespace kvs {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // row-major, 3 bytes per pixel
};

}  // namespace kvs
