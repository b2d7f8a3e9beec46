#include "engine/image/png_file.h"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "engine/core/errors.h"

namespace kvs {
namespace {

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};

void png_error_fn(png_structp png, png_const_charp message) {
  auto* error = static_cast<char*>(png_get_error_ptr(png));
  if (error) std::snprintf(error, 256, "%s", message);
  png_longjmp(png, 1);
}

void png_warning_fn(png_structp, png_const_charp) {}

// libpng reports errors by longjmp: keep every object with a destructor out of
// the functions that call setjmp (they would be skipped, and -Wclobbered warns).
bool encode_png(FILE* file, const RgbImage* image, png_text* chunks, int n_chunks, char* error, size_t error_size) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error, png_error_fn, png_warning_fn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    std::snprintf(error, error_size, "out of memory");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, image->width, image->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (n_chunks > 0) png_set_text(png, info, chunks, n_chunks);
  png_write_info(png, info);
  for (int y = 0; y < image->height; ++y)
    png_write_row(png, const_cast<png_bytep>(image->pixels.data() + static_cast<size_t>(y) * image->width * 3));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

struct DecodedPng {
  int width = 0, height = 0;
  int passes = 1;          // 7 for an interlaced (Adam7) image
  uint64_t raw_bytes = 0;  // the scanlines as stored, before expansion to RGB8
  png_structp png = nullptr;
  png_infop info = nullptr;
};

constexpr png_alloc_size_t kMaxChunkBytes = 16u << 20;

// libpng allocates (and clears) a text chunk's declared length before reading
// it, up to 2 GiB, so a 200-byte file could ask for that: every chunk must fit
// in the rest of the file before libpng sees it. Returns the problem, or "".
std::string check_chunk_lengths(const uint8_t* data, size_t size) {
  size_t pos = 8;
  while (pos < size) {
    if (size - pos < 12) return "the file ends inside a chunk header (truncated?)";
    const uint64_t length = (uint64_t{data[pos]} << 24) | (uint64_t{data[pos + 1]} << 16) |
                            (uint64_t{data[pos + 2]} << 8) | data[pos + 3];
    const std::string type(reinterpret_cast<const char*>(data + pos + 4), 4);
    if (length > size - pos - 12) {
      char message[160];
      std::snprintf(message, sizeof message, "a chunk declares %llu bytes but only %zu remain (truncated?)",
                    static_cast<unsigned long long>(length), size - pos - 12);
      return message;
    }
    pos += 12 + static_cast<size_t>(length);
    if (type == "IEND") break;
  }
  return "";
}

// The encoded image in memory, handed to libpng piece by piece.
struct MemoryReader {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
};

void read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* reader = static_cast<MemoryReader*>(png_get_io_ptr(png));
  if (n > reader->size - reader->pos) png_error(png, "the file ends early (truncated?)");
  std::memcpy(out, reader->data + reader->pos, n);
  reader->pos += n;
}

// Reads the header and sets up RGB8 output; rows and text follow in decode_png_rows.
bool decode_png_header(MemoryReader* reader, DecodedPng* d, char* error) {
  d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, error, png_error_fn, png_warning_fn);
  d->info = d->png ? png_create_info_struct(d->png) : nullptr;
  if (!d->png || !d->info) return false;
  if (setjmp(png_jmpbuf(d->png))) return false;
  png_set_read_fn(d->png, reader, read_from_memory);
  // Decompressed text (zTXt, compressed iTXt) beyond any KV Studio metadata is refused.
  png_set_chunk_malloc_max(d->png, kMaxChunkBytes);
  png_set_sig_bytes(d->png, 8);
  png_read_info(d->png, d->info);
  const uint64_t bits_per_pixel = static_cast<uint64_t>(png_get_bit_depth(d->png, d->info)) *
                                  png_get_channels(d->png, d->info);
  d->raw_bytes = static_cast<uint64_t>(png_get_image_height(d->png, d->info)) *
                 (1 + (png_get_image_width(d->png, d->info) * bits_per_pixel + 7) / 8);
  png_set_expand(d->png);
  png_set_strip_16(d->png);
  png_set_strip_alpha(d->png);
  png_set_gray_to_rgb(d->png);
  d->passes = png_set_interlace_handling(d->png);
  png_read_update_info(d->png, d->info);
  d->width = static_cast<int>(png_get_image_width(d->png, d->info));
  d->height = static_cast<int>(png_get_image_height(d->png, d->info));
  return true;
}

bool decode_png_rows(DecodedPng* d, uint8_t* pixels) {
  if (setjmp(png_jmpbuf(d->png))) return false;
  for (int pass = 0; pass < d->passes; ++pass)
    for (int y = 0; y < d->height; ++y) png_read_row(d->png, pixels + static_cast<size_t>(y) * d->width * 3, nullptr);
  png_read_end(d->png, d->info);
  return true;
}

}  // namespace

void write_png(const std::string& path, const RgbImage& image, const PngTextChunks& text) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3)
    throw Error("write_png " + path + ": image buffer does not match its size");
  const std::string tmp = path + ".tmp-kvstudio";
  std::unique_ptr<FILE, FileCloser> file(std::fopen(tmp.c_str(), "wb"));
  if (!file) throw FileError("file " + path + ": cannot open for writing (" + std::strerror(errno) + ")");
  std::vector<png_text> chunks(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    chunks[i] = png_text{};
    chunks[i].compression = PNG_ITXT_COMPRESSION_NONE;
    chunks[i].key = const_cast<char*>(text[i].first.c_str());
    chunks[i].text = const_cast<char*>(text[i].second.c_str());
    chunks[i].itxt_length = text[i].second.size();
  }
  char error[256] = "";
  const bool ok = encode_png(file.get(), &image, chunks.data(), static_cast<int>(chunks.size()), error, sizeof error);
  const bool flushed = ok && std::fflush(file.get()) == 0;
  file.reset();
  if (!flushed) {
    std::remove(tmp.c_str());
    throw FileError("file " + path + ": PNG write failed (" + (ok ? std::string("disk full?") : std::string(error)) +
                    ")");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw FileError("file " + path + ": cannot move into place (" + ec.message() + ")");
  }
}

PngContents read_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("file " + path + ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw FileError("file " + path + ": cannot be read");
  const std::string data = bytes.str();
  return read_png_bytes(reinterpret_cast<const uint8_t*>(data.data()), data.size(), path);
}

PngContents read_png_bytes(const uint8_t* data, size_t size, const std::string& path) {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) throw FormatError("file " + path + ": not a PNG image");
  if (const std::string problem = check_chunk_lengths(data, size); !problem.empty())
    throw FormatError("file " + path + ": corrupt PNG (" + problem + ")");
  char error[256] = "";
  DecodedPng d;
  MemoryReader reader{data, size, 8};
  auto cleanup = [&] { png_destroy_read_struct(&d.png, &d.info, nullptr); };
  PngContents out;
  bool ok = decode_png_header(&reader, &d, error);
  if (ok && (d.width <= 0 || d.height <= 0 || static_cast<int64_t>(d.width) * d.height > (int64_t{1} << 28))) {
    std::snprintf(error, sizeof error, "image size %dx%d out of range", d.width, d.height);
    ok = false;
  }
  // Deflate shrinks data at most 1032-fold: a header that claims more pixels
  // than the file could hold is refused before the pixels are allocated.
  if (ok && d.raw_bytes > 1032 * static_cast<uint64_t>(size) + 4096) {
    std::snprintf(error, sizeof error, "image size %dx%d is more than its %zu bytes can hold", d.width, d.height, size);
    ok = false;
  }
  if (ok) {
    out.image.width = d.width;
    out.image.height = d.height;
    out.image.pixels.resize(static_cast<size_t>(d.width) * d.height * 3);
    ok = decode_png_rows(&d, out.image.pixels.data());
  }
  if (!ok) {
    cleanup();
    throw FormatError("file " + path + ": corrupt PNG (" + error + ")");
  }
  png_textp text = nullptr;
  int n = 0;
  png_get_text(d.png, d.info, &text, &n);
  for (int i = 0; i < n; ++i) {
    const size_t len = text[i].compression >= PNG_ITXT_COMPRESSION_NONE ? text[i].itxt_length : text[i].text_length;
    out.text.emplace_back(text[i].key, std::string(text[i].text, len));
  }
  cleanup();
  return out;
}

}  // namespace kvs
