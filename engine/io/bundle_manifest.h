#pragma once
// The model.json manifest of a model bundle (model_bundle.h), parsed and
// validated from its text without LibTorch or the file system, so that the
// parser can be fuzzed on its own.
#include <nlohmann/json.hpp>

#include <string>

namespace kvs::io {

// The manifest's JSON once it is a "kvstudio-bundle" object of a version this
// build understands (kBundleFormatVersion, model_bundle.h) with a string
// "family", an object "architecture", a weights file inside the bundle folder
// and, when present, a string "name" and "class_names" as an array of strings.
// Throws FormatError "file <origin>: <field and problem>".
nlohmann::json parse_bundle_manifest(const std::string& text, const std::string& origin);

}  // namespace kvs::io
