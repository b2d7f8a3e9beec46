#pragma once
// Text taken from a file (a tensor name, a zip entry, a class name in a pickle)
// and quoted in an error message: the message must stay one line whatever the
// file holds, so control characters become '?' (UTF-8 passes unchanged).
#include <cstddef>
#include <string>
#include <string_view>

namespace kvs::io {

inline std::string one_line(std::string_view text, std::size_t max_bytes = 200) {
  std::string out(text.substr(0, max_bytes));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  if (text.size() > max_bytes) out += "...";
  return out;
}

}  // namespace kvs::io
