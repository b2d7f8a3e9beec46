#include "engine/io/model_bundle.h"

#include <filesystem>

#include "engine/core/errors.h"
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
  try {
    bundle.manifest = nlohmann::json::parse(read_text_file(origin));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + origin + ": not valid JSON (" + e.what() + ")");
  }
  const auto& m = bundle.manifest;
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw FormatError("file " + origin + ": " + what);
  };
  require(m.is_object(), "must be a JSON object");
  require(m.value("format", "") == "kvstudio-bundle", "field \"format\" must be \"kvstudio-bundle\"");
  require(m.contains("format_version") && m["format_version"].is_number_integer(),
          "missing integer \"format_version\"");
  require(m["format_version"].get<int>() <= kBundleFormatVersion, "format_version " + m["format_version"].dump() +
                                                                      " is newer than this KV Studio understands (" +
                                                                      std::to_string(kBundleFormatVersion) + ")");
  require(m.contains("family") && m["family"].is_string(), "missing string field \"family\"");
  require(m.contains("architecture") && m["architecture"].is_object(), "missing object \"architecture\"");
  require(m.contains("files") && m["files"].is_object() && m["files"].contains("weights") &&
              m["files"]["weights"].is_string(),
          "missing \"files\": {\"weights\": \"<file>.safetensors\"}");
  const std::string weights = m["files"]["weights"].get<std::string>();
  require(weights.find("..") == std::string::npos && !fs::path(weights).is_absolute(),
          "files.weights must be a file inside the bundle folder");
  if (m.contains("class_names")) {
    require(m["class_names"].is_array(), "class_names must be an array of strings");
    for (const auto& n : m["class_names"]) require(n.is_string(), "class_names must be an array of strings");
  }
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
