#pragma once
// A small strict command-line parser: every option is declared, unknown options
// and missing or malformed values are errors that name the option.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kvs::cli {

// In `value_options`: every option that is not a flag takes a value (commands
// that hand their options on to a model family, which says what it does not use).
inline const std::string kAnyValueOption = "*";

class ArgParser {
 public:
  // `value_options`: "--name" options that take a value; `flags`: boolean switches.
  ArgParser(const std::vector<std::string>& args, const std::set<std::string>& value_options,
            const std::set<std::string>& flags, std::size_t max_positional);

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback) const;
  std::string require(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  uint64_t get_u64(const std::string& name, uint64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

int64_t parse_int(const std::string& option, const std::string& text);
double parse_double(const std::string& option, const std::string& text);

}  // namespace kvs::cli
