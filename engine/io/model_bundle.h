#pragma once
// A model bundle is a folder:
//   model.json          {"format": "kvstudio-bundle", "format_version": 1, "name",
//                        "family" ("llamagen"), "architecture" {...},
//                        "tokenizer" {...}, "files" {"weights": "..."},
//                        "class_names" [...]?, "sampling_defaults" {...}?,
//                        "provenance" {...}}
//   <weights>.safetensors  tensors under module prefixes ("gpt.", "vq." for LlamaGen)
// Converted official checkpoints, the project's demo models and models built in
// tests all use this one format and the same loading code.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kvs::io {

constexpr int kBundleFormatVersion = 1;

struct ModelBundle {
  std::string dir;
  nlohmann::json manifest;

  std::string name() const;
  std::string family() const;
  std::string weights_path() const;              // absolute path of files.weights
  std::vector<std::string> class_names() const;  // may be empty

  // Reads and validates DIR/model.json (or a path to model.json itself).
  // Throws FileError / FormatError naming the file and the field.
  static ModelBundle open(const std::string& path);
};

// Writes DIR/model.json atomically (creating DIR).
void write_bundle_manifest(const std::string& dir, const nlohmann::json& manifest);

}  // namespace kvs::io
