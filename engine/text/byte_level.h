#pragma once
// GPT-2's byte-level alphabet: every byte 0..255 stands for one printable code
// point, so that a BPE vocabulary of strings can spell any byte sequence. The
// printable Latin-1 bytes stand for themselves; the others (controls, space,
// 0x7F-0xA0, 0xAD) take U+0100 upwards in byte order. Torch-free.
#include <optional>
#include <string>
#include <string_view>

namespace kvs::text {

// The code point byte `b` is spelled with.
char32_t byte_to_unicode(unsigned char b);

// The byte a code point spells, or nullopt for code points outside the alphabet.
std::optional<unsigned char> unicode_to_byte(char32_t cp);

// Every byte of `bytes` spelled in the alphabet (UTF-8 of the mapped code points).
std::string bytes_to_byte_level(std::string_view bytes);

// The bytes a byte-level piece spells; nullopt when one of its code points is
// outside the alphabet (an added token such as "<｜begin▁of▁sentence｜>").
// `piece` must be valid UTF-8.
std::optional<std::string> byte_level_to_bytes(std::string_view piece);

}  // namespace kvs::text
