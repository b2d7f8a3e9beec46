#pragma once
// The tokenizer.json "pre_tokenizer": cuts normalized text into the pieces BPE
// works on, one step after another, each step cutting every piece further.
// Supported steps (what byte-level BPE files such as DeepSeek-LLM's use):
//   Sequence   the steps in order;
//   Split      a Regex or String pattern with a behaviour (Removed, Isolated,
//              MergedWithPrevious, MergedWithNext, Contiguous) and `invert`;
//   Digits     numbers apart from the rest, each digit alone with
//              individual_digits;
//   ByteLevel  optional prefix space, optional GPT-2 split, then every byte
//              spelled in the byte-level alphabet (byte_level.h).
// Anything else is refused by name. Torch-free; safe to share between threads.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvs::text {

class PreTokenizerStep {
 public:
  virtual ~PreTokenizerStep() = default;
  // Cuts (or rewrites) every piece; pieces that become empty are dropped.
  virtual std::vector<std::string> apply(const std::vector<std::string>& pieces) const = 0;
};

class PreTokenizer {
 public:
  // null -> a pre-tokenizer that keeps the text whole. Throws FormatError
  // "<where>: pre_tokenizer type 'X' is not supported ..." or naming the
  // malformed field.
  static PreTokenizer from_json(const nlohmann::json& node, const std::string& where);

  std::vector<std::string> split(const std::string& text) const;

 private:
  std::vector<std::shared_ptr<const PreTokenizerStep>> steps_;
};

}  // namespace kvs::text
