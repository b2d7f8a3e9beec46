#pragma once
// Reading a Hugging Face tokenizer folder: tokenizer.json (required),
// tokenizer_config.json and special_tokens_map.json (both optional). Errors
// name the file and what is wrong with it. Torch-free.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kvs::text {

// The parsed JSON of `path`. Throws FileError when it is missing or unreadable,
// FormatError "file <path>: not valid JSON: ..." when it does not parse.
nlohmann::json read_json_file(const std::string& path);

// What transformers reads from tokenizer_config.json, with the token names of
// special_tokens_map.json taking precedence as they do there. A token may be
// written as a string or as an object with "content".
struct TokenizerConfig {
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  // tokenizer_class is LlamaTokenizer or LlamaTokenizerFast: add_bos_token
  // then defaults to true, as in transformers.
  bool llama_class = false;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> pad_token;
  std::optional<std::string> unk_token;
  // Absent, or too large for int64 (transformers writes 1e30 for "no limit").
  std::optional<int64_t> model_max_length;
};

// Reads the optional files of `dir`; absent files leave their fields empty.
TokenizerConfig read_tokenizer_config(const std::string& dir);

}  // namespace kvs::text
