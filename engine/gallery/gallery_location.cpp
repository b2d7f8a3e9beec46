#include "engine/gallery/gallery_location.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "engine/core/errors.h"

namespace kvs {
namespace {
namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

// Letters, digits, '-' and '_' only: a stem comes from prompts and model names.
std::string safe_stem(const std::string& stem) {
  std::string out;
  for (const char c : stem) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_';
    if (keep) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
    if (out.size() >= 48) break;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "image" : out;
}

}  // namespace

std::string default_gallery_dir() {
  if (const std::string dir = env("KVSTUDIO_GALLERY_DIR"); !dir.empty()) return dir;
  // XDG says a relative XDG_DATA_HOME is invalid and must be ignored.
  if (const std::string data = env("XDG_DATA_HOME"); !data.empty() && fs::path(data).is_absolute())
    return (fs::path(data) / "kvstudio" / "gallery").string();
  if (const std::string home = env("HOME"); !home.empty())
    return (fs::path(home) / ".local" / "share" / "kvstudio" / "gallery").string();
  throw FileError("no folder for the gallery: set KVSTUDIO_GALLERY_DIR, XDG_DATA_HOME or HOME");
}

std::string gallery_database_path(const std::string& gallery_dir) {
  return (fs::path(gallery_dir) / "gallery.sqlite").string();
}

std::string gallery_images_dir(const std::string& gallery_dir) { return (fs::path(gallery_dir) / "images").string(); }

std::string new_gallery_image_path(const std::string& gallery_dir, const std::string& stem) {
  const fs::path images = gallery_images_dir(gallery_dir);
  std::error_code ec;
  fs::create_directories(images, ec);
  if (ec || !fs::is_directory(images))
    throw FileError("gallery folder " + images.string() + " cannot be created" + (ec ? ": " + ec.message() : ""));
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  const std::string base = std::string(stamp) + "_" + safe_stem(stem);
  for (int i = 1;; ++i) {
    std::string name = base;
    if (i > 1) name.append("_").append(std::to_string(i));
    const fs::path candidate = images / name.append(".png");
    if (!fs::exists(candidate, ec)) return candidate.string();
  }
}

}  // namespace kvs
