#include "app/cli/arg_parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "engine/core/errors.h"
#include "engine/core/number_parsing.h"

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
      } else if (value_options.count(a) || value_options.count(kAnyValueOption)) {
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

int64_t parse_int(const std::string& option, const std::string& text) { return parse_int_option(option, text); }

double parse_double(const std::string& option, const std::string& text) { return parse_double_option(option, text); }

int64_t ArgParser::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? parse_int(name, get(name, "")) : fallback;
}

uint64_t ArgParser::get_u64(const std::string& name, uint64_t fallback) const {
  return has(name) ? parse_u64_option(name, get(name, "")) : fallback;
}

double ArgParser::get_double(const std::string& name, double fallback) const {
  return has(name) ? parse_double(name, get(name, "")) : fallback;
}

}  // namespace kvs::cli
