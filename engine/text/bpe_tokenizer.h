#pragma once
// A Hugging Face byte-level BPE tokenizer (tokenizer.json + tokenizer_config.json
// + special_tokens_map.json), for the text-conditioned families: Janus-Pro uses
// DeepSeek-LLM's tokenizer (LlamaTokenizerFast, BOS <｜begin▁of▁sentence｜>).
// encode() gives the ids the Hugging Face `tokenizers` library gives: added
// tokens found first (never split), then the normalizer, the pre-tokenizer and
// BPE on each piece, then BOS/EOS. Torch-free; every const method is safe to
// call from several threads at once.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvs::text {

class BpeTokenizer {
 public:
  // Loads <dir>/tokenizer.json (required), <dir>/tokenizer_config.json and
  // <dir>/special_tokens_map.json (optional). Throws FileError (a missing or
  // unreadable file) or FormatError (bad JSON, an unsupported model,
  // normalizer, pre-tokenizer or decoder type, a merge naming an unknown piece,
  // a special token the vocabulary lacks), each naming the file and the problem.
  static BpeTokenizer load(const std::string& dir);

  ~BpeTokenizer();
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  // The ids of `text` (UTF-8; InvalidArgumentError otherwise; FormatError when
  // the file's normalizer would grow it past normalized_size_limit). With
  // add_special_tokens, BOS/EOS are added as tokenizer_config.json's
  // add_bos_token/add_eos_token say; without those keys, as tokenizer.json's
  // TemplateProcessing post-processor says.
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const;

  // The text of `ids`; special added tokens left out with skip_special_tokens.
  // Throws InvalidArgumentError naming an id that is no token.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const;

  // The readable text of one token (byte-level decoded: "Ġcat" -> " cat"; an
  // added token as written), for showing a prompt's tokens. A piece that is
  // part of a multi-byte character shows U+FFFD. Throws for an unknown id.
  std::string token_text(int64_t id) const;

  // The id of a token as spelled in the vocabulary or added tokens (byte-level
  // spelling for vocabulary pieces). token_id throws InvalidArgumentError
  // naming the token; find_token returns nullopt.
  int64_t token_id(const std::string& token) const;
  std::optional<int64_t> find_token(const std::string& token) const;

  std::optional<int64_t> bos_id() const;
  std::optional<int64_t> eos_id() const;
  std::optional<int64_t> pad_id() const;

  // Highest id + 1: the rows an embedding indexed by these ids needs at least.
  int64_t vocab_size() const;
  // tokenizer_config.json's model_max_length; nullopt when absent or "no limit".
  std::optional<int64_t> model_max_length() const;

 private:
  struct Impl;
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvs::text
