#pragma once
// The tokenizer.json "normalizer": text rewriting before pre-tokenization.
// DeepSeek-LLM's file has none (null, or an empty Sequence); the simple
// rewriting types are supported too, and any other type is refused by name
// rather than silently skipped, since skipping it would change the ids. Torch-free.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvs::text {

// How much a normalizer may grow a text: at most kNormalizedGrowthLimit times its
// bytes plus kNormalizedSlackBytes (for a Prepend's marker on a short text). Real
// normalizers grow text a few-fold at most (a marker per word, "▁" for " ");
// chained Replace steps whose content holds the next step's pattern multiply it
// from step to step, so a 2 kB tokenizer.json could turn a 20-byte prompt into
// megabytes, and a few more steps into more than the memory holds.
constexpr size_t kNormalizedGrowthLimit = 64;
constexpr size_t kNormalizedSlackBytes = 4096;
size_t normalized_size_limit(size_t text_bytes);

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Throws FormatError "<where>: normalizer X turns a N-byte text into more than M
  // bytes ..." when a step, or the chain, grows a text past normalized_size_limit.
  virtual std::string apply(const std::string& text) const = 0;

  // null -> nullptr (no normalization). Supported types: Sequence, Prepend,
  // Replace (String or Regex pattern). Throws FormatError "<where>: normalizer
  // type 'X' is not supported ..." for others, and for malformed entries.
  static std::unique_ptr<Normalizer> from_json(const nlohmann::json& node, const std::string& where);
};

}  // namespace kvs::text
