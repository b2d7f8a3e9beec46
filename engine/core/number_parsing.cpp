#include "engine/core/number_parsing.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "engine/core/errors.h"

namespace kvs {

std::optional<double> parse_number_text(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto slash = text.find('/');
  if (slash != std::string::npos) {
    const auto num = parse_number_text(text.substr(0, slash));
    const auto den = parse_number_text(text.substr(slash + 1));
    if (!num || !den || *den == 0) return std::nullopt;
    return *num / *den;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

int64_t parse_int_option(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0')
    throw InvalidArgumentError("option " + option + " expects an integer, got '" + text + "'");
  return v;
}

uint64_t parse_u64_option(const std::string& option, const std::string& text) {
  const int64_t v = parse_int_option(option, text);
  if (v < 0) throw InvalidArgumentError("option " + option + " must not be negative");
  return static_cast<uint64_t>(v);
}

double parse_double_option(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v))
    throw InvalidArgumentError("option " + option + " expects a number, got '" + text + "'");
  return v;
}

std::vector<int64_t> parse_int_list_option(const std::string& option, const std::string& text) {
  std::vector<int64_t> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(parse_int_option(option, text.substr(begin, end - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

}  // namespace kvs
