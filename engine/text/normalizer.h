#pragma once
// The tokenizer.json "normalizer": text rewriting before pre-tokenization.
// DeepSeek-LLM's file has none (null, or an empty Sequence); the simple
// rewriting types are supported too, and any other type is refused by name
// rather than silently skipped, since skipping it would change the ids. Torch-free.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvs::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string apply(const std::string& text) const = 0;

  // null -> nullptr (no normalization). Supported types: Sequence, Prepend,
  // Replace (String or Regex pattern). Throws FormatError "<where>: normalizer
  // type 'X' is not supported ..." for others, and for malformed entries.
  static std::unique_ptr<Normalizer> from_json(const nlohmann::json& node, const std::string& where);
};

}  // namespace kvs::text
