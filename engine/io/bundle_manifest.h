#pragma once
// The model.json manifest of a model bundle (model_bundle.h), parsed and
// validated from its text without LibTorch or the file system, so that the
// parser can be fuzzed on its own.
#include <nlohmann/json.hpp>

#include <string>

namespace kvs::io {

// Files that bundles installed side by side share (the demo bundles' evaluation
// classifier) live in this folder beside the bundle folders: a manifest names
// one as files.KEY = {"shared": "<file name>"} (bundle_file_path.h).
constexpr const char* kSharedBundleFilesFolder = "shared";

// A file name in files.KEY that stays inside the bundle folder: not empty, no
// "..", not absolute (sub-folders allowed: "tokenizer").
bool is_inside_bundle(const std::string& name);
// A shared file's name: one path component (no '/', '\\', ".", "..").
bool is_shared_file_name(const std::string& name);

// The manifest's JSON once it is a "kvstudio-bundle" object of a version this
// build understands (kBundleFormatVersion, model_bundle.h) with a string
// "family", an object "architecture", a weights file inside the bundle folder,
// every other entry of "files" a file inside the bundle folder or a shared
// file ({"shared": "<file name>"}), and, when present, a string "name" and
// "class_names" as an array of strings.
// Throws FormatError "file <origin>: <field and problem>".
nlohmann::json parse_bundle_manifest(const std::string& text, const std::string& origin);

}  // namespace kvs::io
