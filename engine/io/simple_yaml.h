#pragma once
// The YAML subset model configuration files use (taming-transformers' and
// Chameleon's vqgan.yaml): nested mappings by indentation, block sequences of
// scalars ("- 1", at the key's indentation or deeper), flow sequences of scalars
// ("[1, 1, 2]", "[]"), and scalars (integers, floats, true/false, null/~, plain
// or quoted strings), with # comments. Anything else (anchors, multi-line
// strings, mappings inside sequences, flow mappings, tabs for indentation) is a
// FormatError naming `origin` and the line, never a guess. Torch-free; part of
// kvs_format and fuzzed with it.
#include <nlohmann/json.hpp>

#include <string>

namespace kvs::io {

nlohmann::json parse_simple_yaml(const std::string& text, const std::string& origin);

}  // namespace kvs::io
