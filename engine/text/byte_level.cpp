#include "engine/text/byte_level.h"

#include <array>

#include "engine/text/utf8.h"

namespace kvs::text {
namespace {

// The bytes that stand for themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool is_printable_byte(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

constexpr unsigned kRemapped = 68;

struct Tables {
  std::array<char32_t, 256> to_unicode{};
  std::array<std::string, 256> to_utf8{};
  // The bytes behind U+0100, U+0101, ...: the 68 that are not printable.
  std::array<unsigned char, kRemapped> remapped{};
  Tables() {
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      if (is_printable_byte(b)) {
        to_unicode[b] = static_cast<char32_t>(b);
      } else {
        remapped[next - 0x100] = static_cast<unsigned char>(b);
        to_unicode[b] = next++;
      }
      append_utf8(to_utf8[b], to_unicode[b]);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t byte_to_unicode(unsigned char b) { return tables().to_unicode[b]; }

std::optional<unsigned char> unicode_to_byte(char32_t cp) {
  if (cp < 0x100) {
    if (is_printable_byte(cp)) return static_cast<unsigned char>(cp);
    return std::nullopt;
  }
  if (cp >= 0x100 + kRemapped) return std::nullopt;
  return tables().remapped[cp - 0x100];
}

std::string bytes_to_byte_level(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += t.to_utf8[static_cast<unsigned char>(c)];
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t pos = 0; pos < piece.size();) {
    const CodePoint cp = decode_code_point(piece, pos);
    const auto b = unicode_to_byte(cp.value);
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
    pos += cp.length;
  }
  return out;
}

}  // namespace kvs::text
