#pragma once
// The tokenizer.json "added_tokens": strings that become one id as they are,
// before any normalization or pre-tokenization cuts the text. They are found
// as the Hugging Face tokenizers library finds them: leftmost match first, the
// longest one at a position, matches never overlapping; `single_word` keeps a
// match only where it is not part of a longer word; `lstrip`/`rstrip` swallow
// the whitespace beside it. Tokens flagged `normalized` are looked for in the
// normalized text, the others in the text as given. Torch-free.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvs::text {

struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A stretch of text: an added token's id, or text still to tokenize.
struct TextSegment {
  std::string text;
  std::optional<int64_t> id;
};

class AddedTokenMatcher {
 public:
  // `tokens` are those to look for, with `content` as it appears in the text to
  // be split (normalized already for the normalized pass).
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  std::vector<TextSegment> split(const std::string& text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;  // longest content first
};

}  // namespace kvs::text
