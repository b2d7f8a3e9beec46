#pragma once
// PNG files with text chunks: KV Studio writes its generation parameters into
// every image (a human-readable "parameters" chunk in the style of local
// image-generation tools, plus a JSON chunk "kvstudio" with the full request),
// and can read them back to recall how an image was made.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/image/rgb_image.h"

namespace kvs {

using PngTextChunks = std::vector<std::pair<std::string, std::string>>;

// Throws FileError; text values are written as uncompressed UTF-8 iTXt chunks.
void write_png(const std::string& path, const RgbImage& image, const PngTextChunks& text = {});

struct PngContents {
  RgbImage image;
  PngTextChunks text;
};
// Throws FileError / FormatError.
PngContents read_png(const std::string& path);
// The same for a PNG already in memory; `path` names it in messages.
PngContents read_png_bytes(const uint8_t* data, size_t size, const std::string& path);

}  // namespace kvs
