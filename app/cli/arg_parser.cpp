#include "app/cli/arg_parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "engine/core/errors.h"

namespace kvs::cli {

ArgParser::ArgParser(const std::vector<std::string>& args, const std::set<std::string>& value_options,
                     const std::set<std::string>& flags, std::size_t max_positional) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::string value;
      bool inline_value = false;
      const auto eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        inline_value = true;
      }
      if (flags.count(a)) {
        if (inline_value) throw InvalidArgumentError("option " + a + " takes no value");
        flags_.insert(a);
      } else if (value_options.count(a)) {
        if (!inline_value) {
          if (i + 1 >= args.size()) throw InvalidArgumentError("option " + a + " needs a value");
          value = args[++i];
        }
        values_[a] = value;
      } else {
        throw InvalidArgumentError("unknown option " + a + " (see --help)");
      }
    } else {
      if (positional_.size() >= max_positional)
        throw InvalidArgumentError("unexpected argument '" + a + "' (see --help)");
      positional_.push_back(a);
    }
  }
}

std::string ArgParser::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string ArgParser::require(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InvalidArgumentError("missing required option " + name);
  return it->second;
}

int64_t parse_int(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0')
    throw InvalidArgumentError("option " + option + " expects an integer, got '" + text + "'");
  return v;
}

double parse_double(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v))
    throw InvalidArgumentError("option " + option + " expects a number, got '" + text + "'");
  return v;
}

int64_t ArgParser::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? parse_int(name, get(name, "")) : fallback;
}

uint64_t ArgParser::get_u64(const std::string& name, uint64_t fallback) const {
  if (!has(name)) return fallback;
  const int64_t v = parse_int(name, get(name, ""));
  if (v < 0) throw InvalidArgumentError("option " + name + " must not be negative");
  return static_cast<uint64_t>(v);
}

double ArgParser::get_double(const std::string& name, double fallback) const {
  return has(name) ? parse_double(name, get(name, "")) : fallback;
}

}  // namespace kvs::cli
