#include "engine/io/model_bundle.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_manifest.h"
#include "engine/io/mapped_file.h"

namespace kvs::io {
namespace fs = std::filesystem;

std::string ModelBundle::name() const { return manifest.value("name", fs::path(dir).filename().string()); }
std::string ModelBundle::family() const { return manifest.at("family").get<std::string>(); }

std::string ModelBundle::weights_path() const {
  return (fs::path(dir) / manifest.at("files").at("weights").get<std::string>()).string();
}

std::vector<std::string> ModelBundle::class_names() const {
  if (!manifest.contains("class_names")) return {};
  return manifest["class_names"].get<std::vector<std::string>>();
}

ModelBundle ModelBundle::open(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) throw FileError("model " + path + ": does not exist");
  fs::path manifest_path = fs::is_directory(p, ec) ? p / "model.json" : p;
  if (!fs::exists(manifest_path, ec))
    throw FileError("model " + path + ": no model.json in this folder (is it a KV Studio model bundle?)");
  ModelBundle bundle;
  bundle.dir = fs::absolute(manifest_path.parent_path()).lexically_normal().string();
  const std::string origin = manifest_path.string();
  bundle.manifest = parse_bundle_manifest(read_text_file(origin), origin);
  const std::string weights = bundle.manifest["files"]["weights"].get<std::string>();
  if (!fs::exists(bundle.weights_path(), ec))
    throw FileError("model " + bundle.dir + ": weights file " + weights + " is missing");
  return bundle;
}

void write_bundle_manifest(const std::string& dir, const nlohmann::json& manifest) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError("folder " + dir + ": cannot create (" + ec.message() + ")");
  write_file_atomic((fs::path(dir) / "model.json").string(), manifest.dump(2) + "\n");
}

}  // namespace kvs::io
