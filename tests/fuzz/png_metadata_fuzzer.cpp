// libFuzzer target for the PNG reader (engine/image/png_file: libpng, the text
// chunks KV Studio reads its metadata from). Any input must give an image whose
// pixels match its size, or throw kvs::FormatError.
#include <cstdint>
#include <cstdlib>

#include "engine/core/errors.h"
#include "engine/image/png_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kvs::PngContents png = kvs::read_png_bytes(data, size, "fuzz.png");
    const auto& image = png.image;
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3)
      std::abort();
    for (const auto& [key, value] : png.text) (void)(key.size() + value.size());
  } catch (const kvs::FormatError&) {
  }
  return 0;
}
