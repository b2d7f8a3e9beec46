#include "engine/image/png_file.h"

#include <png.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "engine/core/errors.h"

namespace kvs {
namespace {

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};

void png_error_fn(png_structp png, png_const_charp message) {
  auto* error = static_cast<std::string*>(png_get_error_ptr(png));
  if (error) *error = message;
  png_longjmp(png, 1);
}

void png_warning_fn(png_structp, png_const_charp) {}

}  // namespace

void write_png(const std::string& path, const RgbImage& image, const PngTextChunks& text) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3)
    throw Error("write_png " + path + ": image buffer does not match its size");
  const std::string tmp = path + ".tmp-kvstudio";
  std::unique_ptr<FILE, FileCloser> file(std::fopen(tmp.c_str(), "wb"));
  if (!file) throw FileError("file " + path + ": cannot open for writing");
  std::string error;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, png_error_fn, png_warning_fn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    throw Error("libpng: out of memory");
  }
  std::vector<png_text> chunks(text.size());
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    file.reset();
    std::remove(tmp.c_str());
    throw FileError("file " + path + ": PNG write failed (" + error + ")");
  }
  png_init_io(png, file.get());
  png_set_IHDR(png, info, image.width, image.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  for (size_t i = 0; i < text.size(); ++i) {
    chunks[i] = png_text{};
    chunks[i].compression = PNG_ITXT_COMPRESSION_NONE;
    chunks[i].key = const_cast<char*>(text[i].first.c_str());
    chunks[i].text = const_cast<char*>(text[i].second.c_str());
    chunks[i].itxt_length = text[i].second.size();
  }
  if (!chunks.empty()) png_set_text(png, info, chunks.data(), static_cast<int>(chunks.size()));
  png_write_info(png, info);
  for (int y = 0; y < image.height; ++y)
    png_write_row(png, const_cast<png_bytep>(image.pixels.data() + static_cast<size_t>(y) * image.width * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fflush(file.get()) != 0) {
    file.reset();
    std::remove(tmp.c_str());
    throw FileError("file " + path + ": write failed (disk full?)");
  }
  file.reset();
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw FileError("file " + path + ": cannot move into place (" + ec.message() + ")");
  }
}

PngContents read_png(const std::string& path) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) throw FileError("file " + path + ": cannot open");
  unsigned char sig[8] = {};
  if (std::fread(sig, 1, 8, file.get()) != 8 || png_sig_cmp(sig, 0, 8) != 0)
    throw FormatError("file " + path + ": not a PNG image");
  std::string error;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, png_error_fn, png_warning_fn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw Error("libpng: out of memory");
  }
  PngContents out;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw FormatError("file " + path + ": corrupt PNG (" + error + ")");
  }
  png_init_io(png, file.get());
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_read_update_info(png, info);
  out.image.width = static_cast<int>(png_get_image_width(png, info));
  out.image.height = static_cast<int>(png_get_image_height(png, info));
  out.image.pixels.resize(static_cast<size_t>(out.image.width) * out.image.height * 3);
  for (int y = 0; y < out.image.height; ++y)
    png_read_row(png, out.image.pixels.data() + static_cast<size_t>(y) * out.image.width * 3, nullptr);
  png_read_end(png, info);
  png_textp text = nullptr;
  int n = 0;
  png_get_text(png, info, &text, &n);
  for (int i = 0; i < n; ++i) {
    const size_t len = text[i].compression >= PNG_ITXT_COMPRESSION_NONE ? text[i].itxt_length : text[i].text_length;
    out.text.emplace_back(text[i].key, std::string(text[i].text, len));
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return out;
}

}  // namespace kvs
