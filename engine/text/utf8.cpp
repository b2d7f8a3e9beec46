#include "engine/text/utf8.h"

#include <cstdio>

#include "engine/core/errors.h"

namespace kvs::text {
namespace {

// Length of the well-formed sequence starting at `pos`, or the length of the
// maximal prefix of one (0 meaning "this byte alone is ill-formed") with
// `valid` false. Table 3-7 of the Unicode standard: the second byte's range
// depends on the lead byte, which rules out overlongs and surrogates.
struct Step {
  size_t length;
  bool valid;
};

Step step_at(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {1, true};
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return {1, false};
  }
  size_t i = 1;
  for (; i <= need; ++i) {
    if (pos + i >= s.size()) return {i, false};
    const auto b = static_cast<unsigned char>(s[pos + i]);
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) return {i, false};
  }
  return {need + 1, true};
}

}  // namespace

std::optional<size_t> first_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const Step st = step_at(text, pos);
    if (!st.valid) return pos;
    pos += st.length;
  }
  return std::nullopt;
}

void require_valid_utf8(std::string_view text, const std::string& what) {
  if (const auto bad = first_invalid_utf8(text)) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[*bad]));
    throw InvalidArgumentError(what + " is not valid UTF-8 (byte " + hex + " at offset " + std::to_string(*bad) + ")");
  }
}

CodePoint decode_code_point(std::string_view s, size_t pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) return {b0, 1};
  size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
  char32_t cp = b0 & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  return {cp, len};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Step st = step_at(bytes, pos);
    if (st.valid) {
      out.append(bytes.substr(pos, st.length));
    } else {
      append_utf8(out, 0xFFFD);
    }
    pos += st.length;
  }
  return out;
}

}  // namespace kvs::text
