#include "engine/io/simple_yaml.h"

#include <cstdlib>
#include <regex>
#include <sstream>
#include <vector>

#include "engine/core/errors.h"

namespace kvs::io {
namespace {

struct Line {
  int number;
  size_t indent;
  std::string text;  // without indentation, comment and trailing blanks
};

// Removes a comment that starts outside quotes.
std::string without_comment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

class Parser {
 public:
  Parser(const std::string& text, std::string origin) : origin_(std::move(origin)) {
    std::istringstream in(text);
    std::string raw;
    int number = 0;
    while (std::getline(in, raw)) {
      ++number;
      if (!raw.empty() && raw.back() == '\r') raw.pop_back();
      const size_t indent = raw.find_first_not_of(' ');
      if (indent != std::string::npos && raw[indent] == '\t') fail(number, "tabs are not allowed for indentation");
      const std::string text_part = trimmed(without_comment(raw));
      if (text_part.empty() || text_part == "---") continue;
      lines_.push_back({number, indent, text_part});
    }
  }

  nlohmann::json parse() {
    if (lines_.empty()) return nlohmann::json::object();
    size_t i = 0;
    nlohmann::json root = block(i, lines_[0].indent);
    if (i < lines_.size()) fail(lines_[i].number, "unexpected indentation");
    return root;
  }

 private:
  [[noreturn]] void fail(int line, const std::string& what) const {
    throw FormatError(origin_ + ": line " + std::to_string(line) + ": " + what);
  }

  static bool is_item(const std::string& t) { return t == "-" || t.rfind("- ", 0) == 0; }

  nlohmann::json block(size_t& i, size_t indent) {
    if (is_item(lines_[i].text)) return sequence(i, indent);
    return mapping(i, indent);
  }

  nlohmann::json sequence(size_t& i, size_t indent) {
    nlohmann::json out = nlohmann::json::array();
    while (i < lines_.size() && lines_[i].indent == indent && is_item(lines_[i].text)) {
      const Line& line = lines_[i];
      const std::string item = trimmed(line.text.substr(1));
      if (item.empty() || (item.find(": ") != std::string::npos && item.front() != '\'' && item.front() != '"') ||
          (item.back() == ':'))
        fail(line.number, "only scalars are supported as sequence items");
      out.push_back(scalar(item, line.number));
      ++i;
    }
    return out;
  }

  nlohmann::json mapping(size_t& i, size_t indent) {
    nlohmann::json out = nlohmann::json::object();
    while (i < lines_.size() && lines_[i].indent == indent) {
      const Line& line = lines_[i];
      if (is_item(line.text)) fail(line.number, "a sequence item where a key was expected");
      const size_t colon = line.text.find(':');
      if (colon == std::string::npos || colon == 0 || (colon + 1 < line.text.size() && line.text[colon + 1] != ' '))
        fail(line.number, "expected 'key: value'");
      const std::string key = trimmed(line.text.substr(0, colon));
      const std::string rest = trimmed(line.text.substr(colon + 1));
      if (out.contains(key)) fail(line.number, "key '" + key + "' appears twice");
      ++i;
      if (!rest.empty()) {
        out[key] = scalar(rest, line.number);
      } else if (i < lines_.size() && lines_[i].indent > indent) {
        out[key] = block(i, lines_[i].indent);
      } else if (i < lines_.size() && lines_[i].indent == indent && is_item(lines_[i].text)) {
        out[key] = sequence(i, indent);  // YAML allows a key's list at the key's own indentation
      } else {
        out[key] = nullptr;
      }
    }
    if (i < lines_.size() && lines_[i].indent > indent) fail(lines_[i].number, "unexpected indentation");
    return out;
  }

  nlohmann::json scalar(const std::string& text, int line) const {
    if (text.front() == '[') {
      if (text.back() != ']') fail(line, "unterminated flow sequence");
      nlohmann::json out = nlohmann::json::array();
      const std::string inner = trimmed(text.substr(1, text.size() - 2));
      if (inner.empty()) return out;
      std::stringstream items(inner);
      std::string item;
      while (std::getline(items, item, ',')) {
        const std::string t = trimmed(item);
        if (t.empty() || t.front() == '[' || t.front() == '{') fail(line, "only scalars are supported in [ ]");
        out.push_back(scalar(t, line));
      }
      return out;
    }
    if (text.front() == '{' || text.front() == '&' || text.front() == '*' || text.front() == '|' ||
        text.front() == '>' || text.front() == '!')
      fail(line, "this YAML feature is not supported ('" + text.substr(0, 1) + "')");
    if (text.front() == '\'' || text.front() == '"') {
      if (text.size() < 2 || text.back() != text.front()) fail(line, "unterminated quoted string");
      return text.substr(1, text.size() - 2);
    }
    if (text == "true" || text == "True") return true;
    if (text == "false" || text == "False") return false;
    if (text == "null" || text == "~" || text == "None") return nullptr;
    static const std::regex integer(R"([-+]?[0-9]{1,18})");
    static const std::regex real(R"([-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?)");
    if (std::regex_match(text, integer)) return std::strtoll(text.c_str(), nullptr, 10);
    if (std::regex_match(text, real)) return std::strtod(text.c_str(), nullptr);
    return text;
  }

  std::string origin_;
  std::vector<Line> lines_;
};

}  // namespace

nlohmann::json parse_simple_yaml(const std::string& text, const std::string& origin) {
  return Parser(text, origin).parse();
}

}  // namespace kvs::io
