#include "engine/text/normalizer.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/json_fields.h"
#include "engine/text/unicode_regex.h"

namespace kvs::text {

size_t normalized_size_limit(size_t text_bytes) { return kNormalizedGrowthLimit * text_bytes + kNormalizedSlackBytes; }

namespace {

// The refusal when a rewriting outgrows normalized_size_limit (see normalizer.h).
[[noreturn]] void refuse_growth(const std::string& where, size_t text_bytes) {
  throw FormatError(where + " turns a " + std::to_string(text_bytes) + "-byte text into more than " +
                    std::to_string(normalized_size_limit(text_bytes)) + " bytes (at most " +
                    std::to_string(kNormalizedGrowthLimit) + " times the text plus " +
                    std::to_string(kNormalizedSlackBytes) +
                    " bytes): rules that multiply text like this make a broken or hostile tokenizer file");
}

class SequenceNormalizer : public Normalizer {
 public:
  SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps, std::string where)
      : steps_(std::move(steps)), where_(std::move(where)) {}
  std::string apply(const std::string& text) const override {
    // Each step is bounded by its own input; the chain by the original text, so
    // that growth cannot compound from step to step.
    std::string out = text;
    for (const auto& s : steps_) {
      out = s->apply(out);
      if (out.size() > normalized_size_limit(text.size())) refuse_growth(where_, text.size());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
  std::string where_;
};

class PrependNormalizer : public Normalizer {
 public:
  PrependNormalizer(std::string prefix, std::string where) : prefix_(std::move(prefix)), where_(std::move(where)) {}
  // An empty text stays empty: there is nothing to mark the start of.
  std::string apply(const std::string& text) const override {
    if (text.empty()) return text;
    if (prefix_.size() + text.size() > normalized_size_limit(text.size())) refuse_growth(where_, text.size());
    return prefix_ + text;
  }

 private:
  std::string prefix_;
  std::string where_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(UnicodeRegex pattern, std::string content, std::string where)
      : pattern_(std::move(pattern)), content_(std::move(content)), where_(std::move(where)) {}
  // Every match is replaced, an empty one too (the content is inserted there),
  // as the library does; it searches no empty text, so that stays empty.
  std::string apply(const std::string& text) const override {
    if (text.empty()) return text;
    const size_t limit = normalized_size_limit(text.size());
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : pattern_.find_all(text)) {
      out.append(text, prev, b - prev);
      out += content_;
      prev = e;
      // Checked as it grows: the refusal comes before the memory is spent.
      if (out.size() > limit) refuse_growth(where_, text.size());
    }
    out.append(text, prev, std::string::npos);
    return out;
  }

 private:
  UnicodeRegex pattern_;
  std::string content_;
  std::string where_;
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
    return std::make_unique<SequenceNormalizer>(std::move(steps), here);
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(json_string(node, "prepend", here), here);
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(json_pattern(node, "pattern", here), json_string(node, "content", here),
                                               here);
  }
  throw FormatError(where + ": normalizer type '" + type +
                    "' is not supported (supported: null, Sequence, Prepend, Replace)");
}

}  // namespace kvs::text
