#include "engine/text/pre_tokenizer.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/byte_level.h"
#include "engine/text/json_fields.h"
#include "engine/text/unicode_regex.h"

namespace kvs::text {
namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return Behavior::Removed;
  if (name == "Isolated") return Behavior::Isolated;
  if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::MergedWithNext;
  if (name == "Contiguous") return Behavior::Contiguous;
  throw FormatError(where + ": split behavior '" + name +
                    "' is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct Span {
  size_t begin, end;
  bool is_match;
};

// The piece as alternating spans of matches and the text between them.
std::vector<Span> spans_of(const UnicodeRegex& pattern, const std::string& piece, bool invert) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [b, e] : pattern.find_all(piece)) {
    if (b > prev) spans.push_back({prev, b, invert});
    spans.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < piece.size()) spans.push_back({prev, piece.size(), invert});
  return spans;
}

// How matches join their neighbours. A match right after another match is never
// merged into it (nor, for MergedWithNext, into a match right before it).
std::vector<std::pair<size_t, size_t>> apply_behavior(const std::vector<Span>& spans, Behavior behavior) {
  std::vector<std::pair<size_t, size_t>> out;
  switch (behavior) {
    case Behavior::Removed:
      for (const Span& s : spans) {
        if (!s.is_match) out.emplace_back(s.begin, s.end);
      }
      break;
    case Behavior::Isolated:
      for (const Span& s : spans) out.emplace_back(s.begin, s.end);
      break;
    case Behavior::MergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool next_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !next_match && !out.empty()) {
          out.back().first = it->begin;
        } else {
          out.emplace_back(it->begin, it->end);
        }
        next_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case Behavior::Contiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !out.empty()) {
          out.back().second = s.end;
        } else {
          out.emplace_back(s.begin, s.end);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  return out;
}

class SplitStep : public PreTokenizerStep {
 public:
  SplitStep(UnicodeRegex pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  std::vector<std::string> apply(const std::vector<std::string>& pieces) const override {
    std::vector<std::string> out;
    for (const std::string& piece : pieces) {
      for (const auto& [b, e] : apply_behavior(spans_of(pattern_, piece, invert_), behavior_)) {
        if (e > b) out.push_back(piece.substr(b, e - b));
      }
    }
    return out;
  }

 private:
  UnicodeRegex pattern_;
  Behavior behavior_;
  bool invert_;
};

// GPT-2's split, used by ByteLevel when use_regex is on.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelStep : public PreTokenizerStep {
 public:
  ByteLevelStep(bool add_prefix_space, bool use_regex, const std::string& where) : add_prefix_space_(add_prefix_space) {
    if (use_regex)
      split_.emplace(UnicodeRegex(kGpt2Pattern, UnicodeRegex::Syntax::Regex, where), Behavior::Isolated, false);
  }

  std::vector<std::string> apply(const std::vector<std::string>& pieces) const override {
    std::vector<std::string> spaced;
    spaced.reserve(pieces.size());
    for (const std::string& piece : pieces) {
      spaced.push_back(add_prefix_space_ && piece.rfind(' ', 0) != 0 ? " " + piece : piece);
    }
    std::vector<std::string> cut = split_ ? split_->apply(spaced) : spaced;
    for (std::string& piece : cut) piece = bytes_to_byte_level(piece);
    return cut;
  }

 private:
  bool add_prefix_space_;
  std::optional<SplitStep> split_;
};

void add_steps(const nlohmann::json& node, const std::string& where,
               std::vector<std::shared_ptr<const PreTokenizerStep>>& steps) {
  if (node.is_null()) return;
  const std::string type = json_string(node, "type", where + ": pre_tokenizer");
  const std::string here = where + ": pre_tokenizer " + type;
  if (type == "Sequence") {
    for (const auto& item : json_array(node, "pretokenizers", here)) add_steps(item, where, steps);
  } else if (type == "Split") {
    const Behavior behavior = parse_behavior(json_string(node, "behavior", here), here);
    steps.push_back(std::make_shared<SplitStep>(json_pattern(node, "pattern", here), behavior,
                                                json_bool(node, "invert", false, here)));
  } else if (type == "Digits") {
    // Numbers as Unicode defines them (general category N), like Rust's is_numeric.
    const bool individual = json_bool(node, "individual_digits", false, here);
    steps.push_back(std::make_shared<SplitStep>(UnicodeRegex(R"(\p{N})", UnicodeRegex::Syntax::Regex, here),
                                                individual ? Behavior::Isolated : Behavior::Contiguous, false));
  } else if (type == "ByteLevel") {
    steps.push_back(std::make_shared<ByteLevelStep>(json_bool(node, "add_prefix_space", true, here),
                                                    json_bool(node, "use_regex", true, here), here));
  } else {
    throw FormatError(where + ": pre_tokenizer type '" + type +
                      "' is not supported (supported: null, Sequence, Split, Digits, ByteLevel)");
  }
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& node, const std::string& where) {
  PreTokenizer p;
  add_steps(node, where, p.steps_);
  return p;
}

std::vector<std::string> PreTokenizer::split(const std::string& text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.push_back(text);
  for (const auto& step : steps_) pieces = step->apply(pieces);
  return pieces;
}

}  // namespace kvs::text
