#pragma once
// UTF-8 helpers for the tokenizer: checking input, stepping over code points and
// turning decoded bytes back into text. Torch-free.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvs::text {

// Byte offset of the first byte that does not start a valid UTF-8 sequence
// (overlong forms, surrogates and code points above U+10FFFF count as invalid);
// nullopt when the whole text is valid.
std::optional<size_t> first_invalid_utf8(std::string_view text);

// Throws InvalidArgumentError naming `what` and the offending byte offset when
// `text` is not valid UTF-8.
void require_valid_utf8(std::string_view text, const std::string& what);

// The code point starting at `pos` of valid UTF-8 text, and its length in bytes.
struct CodePoint {
  char32_t value;
  size_t length;
};
CodePoint decode_code_point(std::string_view text, size_t pos);

// Appends the UTF-8 form of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

// Decoded bytes as text: every ill-formed part becomes U+FFFD, one per maximal
// ill-formed subsequence (the Unicode "best practice" that Rust's from_utf8_lossy,
// and so the Hugging Face decoders, follow).
std::string utf8_lossy(std::string_view bytes);

}  // namespace kvs::text
