#include "engine/io/bundle_file_path.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_manifest.h"

namespace kvs::io {
namespace fs = std::filesystem;

std::optional<std::string> bundle_file_path(const ModelBundle& bundle, const std::string& key) {
  const auto files = bundle.manifest.find("files");
  if (files == bundle.manifest.end() || !files->is_object() || !files->contains(key)) return std::nullopt;
  const nlohmann::json& entry = files->at(key);
  if (entry.is_string()) return (fs::path(bundle.dir) / entry.get<std::string>()).string();
  // parse_bundle_manifest has checked the form: {"shared": one file name}.
  const std::string name = entry.at("shared").get<std::string>();
  const fs::path path = fs::path(bundle.dir).parent_path() / kSharedBundleFilesFolder / name;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw FileError("model " + bundle.dir + ": files." + key + " is the shared file " + name + ", which is not at " +
                    path.string() + " (the folder \"" + kSharedBundleFilesFolder +
                    "\" beside the bundle folder holds the files bundles installed together share)");
  return path.string();
}

}  // namespace kvs::io
