#include "engine/text/normalizer.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/json_fields.h"
#include "engine/text/unicode_regex.h"

namespace kvs::text {
namespace {

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string apply(const std::string& text) const override {
    std::string out = text;
    for (const auto& s : steps_) out = s->apply(out);
    return out;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  // An empty text stays empty: there is nothing to mark the start of.
  std::string apply(const std::string& text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(UnicodeRegex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string apply(const std::string& text) const override {
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : pattern_.find_all(text)) {
      if (b == e) continue;
      out.append(text, prev, b - prev);
      out += content_;
      prev = e;
    }
    out.append(text, prev, std::string::npos);
    return out;
  }

 private:
  UnicodeRegex pattern_;
  std::string content_;
};

}  // namespace

std::unique_ptr<Normalizer> Normalizer::from_json(const nlohmann::json& node, const std::string& where) {
  if (node.is_null()) return nullptr;
  const std::string type = json_string(node, "type", where + ": normalizer");
  const std::string here = where + ": normalizer " + type;
  if (type == "Sequence") {
    const nlohmann::json& list = json_array(node, "normalizers", here);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& item : list) {
      if (auto step = from_json(item, where)) steps.push_back(std::move(step));
    }
    if (steps.empty()) return nullptr;
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(json_string(node, "prepend", here));
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(json_pattern(node, "pattern", here), json_string(node, "content", here));
  }
  throw FormatError(where + ": normalizer type '" + type +
                    "' is not supported (supported: null, Sequence, Prepend, Replace)");
}

}  // namespace kvs::text
