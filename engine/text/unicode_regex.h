#pragma once
// A compiled Unicode regular expression (PCRE2, UTF + Unicode properties, JIT
// when the platform has it) for the tokenizer's split patterns. PCRE2 stays
// behind this header. Torch-free.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvs::text {

class UnicodeRegex {
 public:
  enum class Syntax { Regex, Literal };

  // Throws FormatError "<where>: ..." with PCRE2's message and offset when the
  // pattern does not compile. `^` and `$` match at line boundaries, as in the
  // Oniguruma (Ruby) syntax the Hugging Face tokenizers compile their patterns with.
  UnicodeRegex(const std::string& pattern, Syntax syntax, const std::string& where);
  ~UnicodeRegex();
  UnicodeRegex(UnicodeRegex&&) noexcept;
  UnicodeRegex& operator=(UnicodeRegex&&) noexcept;

  // Every non-overlapping match, left to right, as [begin, end) byte offsets,
  // as the library's regex search (the Oniguruma binding's find_iter) gives
  // them: empty matches are reported too, except one that ends where the
  // previous match ended ("x*" on "axxb": [0,0), [1,3), [4,4)).
  // `text` must be valid UTF-8. Safe to call from several threads at once.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

  // Whether the pattern matches at exactly `pos` (anchored there). `text` must
  // be valid UTF-8 and `pos` a code point boundary: they are not checked.
  bool matches_at(std::string_view text, size_t pos) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

}  // namespace kvs::text
