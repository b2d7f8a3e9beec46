#include "engine/io/bundle_manifest.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"

namespace kvs::io {

bool is_inside_bundle(const std::string& name) {
  return !name.empty() && name.find("..") == std::string::npos && name.find('\0') == std::string::npos &&
         !std::filesystem::path(name).is_absolute();
}

bool is_shared_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\\\0", 3)) == std::string::npos;
}

nlohmann::json parse_bundle_manifest(const std::string& text, const std::string& origin) {
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + origin + ": not valid JSON (" + e.what() + ")");
  }
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw FormatError("file " + origin + ": " + what);
  };
  require(m.is_object(), "must be a JSON object");
  const auto format = m.find("format");
  require(format != m.end() && format->is_string() && *format == "kvstudio-bundle",
          "field \"format\" must be \"kvstudio-bundle\"");
  require(m.contains("format_version") && m["format_version"].is_number_integer(),
          "missing integer \"format_version\"");
  // Compared as JSON numbers: a version beyond int must not wrap into range.
  require(m["format_version"] <= kBundleFormatVersion, "format_version " + m["format_version"].dump() +
                                                           " is newer than this KV Studio understands (" +
                                                           std::to_string(kBundleFormatVersion) + ")");
  require(m.contains("family") && m["family"].is_string(), "missing string field \"family\"");
  require(m.contains("architecture") && m["architecture"].is_object(), "missing object \"architecture\"");
  require(m.contains("files") && m["files"].is_object() && m["files"].contains("weights") &&
              m["files"]["weights"].is_string(),
          "missing \"files\": {\"weights\": \"<file>.safetensors\"}");
  // Every file a bundle names is inside its folder, or a named shared file
  // (model_bundle.h): nothing in model.json reaches elsewhere.
  for (const auto& [key, value] : m["files"].items()) {
    if (value.is_string()) {
      require(is_inside_bundle(value.get<std::string>()), "files." + key + " must be a file inside the bundle folder");
    } else if (value.is_object()) {
      require(value.size() == 1 && value.contains("shared") && value["shared"].is_string() &&
                  is_shared_file_name(value["shared"].get<std::string>()),
              "files." + key + " must be {\"shared\": \"<file name>\"}: one file name, no folder, in the folder \"" +
                  std::string(kSharedBundleFilesFolder) + "\" beside the bundle folder");
    } else {
      require(false, "files." + key + " must be a file name or {\"shared\": \"<file name>\"}");
    }
  }
  if (m.contains("name")) require(m["name"].is_string(), "field \"name\" must be a string");
  if (m.contains("class_names")) {
    require(m["class_names"].is_array(), "class_names must be an array of strings");
    for (const auto& n : m["class_names"]) require(n.is_string(), "class_names must be an array of strings");
  }
  return m;
}

}  // namespace kvs::io
