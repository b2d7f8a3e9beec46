// Corner cases where the Hugging Face `tokenizers` library's behaviour is easy
// to get subtly wrong, on the floor's own classes. Every expected value here was
// checked against the library (tokenizers 0.23: Tokenizer.from_str,
// normalizers.Replace, pre_tokenizers.Split, Tokenizer.add_tokens); make_tokenizer_fixture.py's
// duplicate_merges and empty_matches variants check the same cases on full
// tokenizers.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/added_tokens.h"
#include "engine/text/bpe_model.h"
#include "engine/text/normalizer.h"
#include "engine/text/pre_tokenizer.h"

namespace {

using kvs::text::AddedToken;
using kvs::text::AddedTokenMatcher;
using kvs::text::BpeModel;
using kvs::text::Normalizer;
using kvs::text::PreTokenizer;

BpeModel abc_model(const nlohmann::json& merges) {
  return BpeModel::from_json(
      {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}}}, {"merges", merges}}, "test");
}

// The library builds its merge table by inserting every listed merge in order,
// so a pair listed twice has the rank of its last listing. "b c" first and again
// after "a b" therefore ranks below "a b": "abc" is ab + c, not a + bc.
TEST(BpeModelSemantics, APairListedTwiceHasTheRankOfItsLastListing) {
  EXPECT_EQ(abc_model({"b c", "a b"}).encode("abc"), (std::vector<int64_t>{0, 4})) << "a + bc";
  EXPECT_EQ(abc_model({"b c", "a b", "b c"}).encode("abc"), (std::vector<int64_t>{3, 2})) << "ab + c";
  EXPECT_EQ(abc_model(nlohmann::json::array({{"b", "c"}, {"a", "b"}, {"b", "c"}})).encode("abc"),
            (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(abc_model({"a b", "b c", "a b"}).encode("abc"), (std::vector<int64_t>{0, 4})) << "a + bc";
}

std::string replace(const nlohmann::json& pattern, const std::string& content, const std::string& text) {
  const auto n = Normalizer::from_json({{"type", "Replace"}, {"pattern", pattern}, {"content", content}}, "test");
  return n->apply(text);
}

// Replace rewrites every match the library's regex search finds, empty ones
// included: an empty match inserts the content there. The search skips an empty
// match that ends where the previous match ended (so "x*" on "axxb" does not
// match again between "xx" and "b"), and an empty text is left as it is.
TEST(NormalizerSemantics, ReplaceInsertsItsContentAtEmptyMatches) {
  const nlohmann::json x_star = {{"Regex", "x*"}};
  EXPECT_EQ(replace(x_star, "-", "axxb"), "-a-b-");
  EXPECT_EQ(replace(x_star, "-", "xx"), "-");
  EXPECT_EQ(replace(x_star, "-", "é€x"), "-é-€-") << "empty matches step over whole characters";
  EXPECT_EQ(replace(x_star, "-", ""), "");
  EXPECT_EQ(replace({{"Regex", "x*?"}}, "-", "axb"), "-a-x-b-") << "a lazy pattern only ever matches empty";
  EXPECT_EQ(replace({{"Regex", "(?=b)"}}, "-", "abab"), "a-ba-b");
  EXPECT_EQ(replace({{"Regex", "\\b"}}, "|", "ab cd"), "|ab| |cd|");
  EXPECT_EQ(replace({{"Regex", "^"}}, ">", "a\nb"), ">a\n>b");
  EXPECT_EQ(replace({{"Regex", "$"}}, "!", "a\nb"), "a!\nb!");
}

// A String pattern is compiled as an escaped regex, so "" is the empty regex
// and matches between every two characters and at both ends.
TEST(NormalizerSemantics, AnEmptyStringPatternMatchesAtEveryPosition) {
  EXPECT_EQ(replace({{"String", ""}}, "-", "abc"), "-a-b-c-");
  EXPECT_EQ(replace({{"String", ""}}, "-", ""), "");
}

std::vector<std::string> split_x_star(const std::string& behavior, const std::string& text) {
  return PreTokenizer::from_json(
             {{"type", "Split"}, {"pattern", {{"Regex", "x*"}}}, {"behavior", behavior}, {"invert", false}}, "test")
      .split(text);
}

// Split sees the same matches as Replace. An extra empty match after "xx"
// would end the match run there and keep "xx" from merging with the "b" after it.
TEST(PreTokenizerSemantics, SplitOnAPatternThatMatchesEmptySeesTheLibrarysMatches) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_x_star("MergedWithNext", "axxb"), (V{"a", "xxb"}));
  EXPECT_EQ(split_x_star("MergedWithNext", "xaxxbx"), (V{"xa", "xxb", "x"}));
  EXPECT_EQ(split_x_star("MergedWithPrevious", "xaxxbx"), (V{"x", "axx", "bx"}));
  EXPECT_EQ(split_x_star("Isolated", "xaxxbx"), (V{"x", "a", "xx", "b", "x"}));
  EXPECT_EQ(split_x_star("Contiguous", "xaxxbx"), (V{"x", "a", "xx", "b", "x"}));
  EXPECT_EQ(split_x_star("Removed", "xaxxbx"), (V{"a", "b"}));
}

// The text around each added-token match, as "[text]" for plain text and
// "<id>" for a token.
std::string segments(const AddedTokenMatcher& matcher, const std::string& text) {
  std::string out;
  for (const auto& seg : matcher.split(text)) {
    if (seg.id) {
      out += '<';
      out += std::to_string(*seg.id);
      out += '>';
    } else {
      out += '[';
      out += seg.text;
      out += ']';
    }
  }
  return out;
}

AddedToken added(int64_t id, const std::string& content, bool single_word, bool lstrip, bool rstrip) {
  AddedToken t;
  t.id = id;
  t.content = content;
  t.single_word = single_word;
  t.lstrip = lstrip;
  t.rstrip = rstrip;
  return t;
}

// The library tests an added token's neighbours with the Rust regex crate's \w
// (alphabetic, marks, decimal digits, connector punctuation, joiners) and \s
// (White_Space), not with its Oniguruma split patterns: a mark, "‿" or a
// zero-width joiner after "cat" makes it part of a word, "²" before it does not,
// and U+180E (no longer white space since Unicode 6.3) is not stripped.
TEST(AddedTokenSemantics, WordAndSpaceAreTheRustRegexCratesClasses) {
  const AddedTokenMatcher cat({added(7, "cat", true, false, false)});
  EXPECT_EQ(segments(cat, "a cat x"), "[a ]<7>[ x]");
  EXPECT_EQ(segments(cat, "a cat\u0301 x"), "[a cat\u0301 x]") << "a combining mark continues the word";
  EXPECT_EQ(segments(cat, "cat\u203f"), "[cat\u203f]") << "connector punctuation is a word character";
  EXPECT_EQ(segments(cat, "cat\u200d"), "[cat\u200d]") << "a zero-width joiner is a word character";
  EXPECT_EQ(segments(cat, "\u2160cat"), "[\u2160cat]") << "a letter number is alphabetic";
  EXPECT_EQ(segments(cat, "a \u00b2cat x"), "[a \u00b2]<7>[ x]") << "a superscript digit is not a word character";

  const AddedTokenMatcher strip({added(8, "<r>", false, false, true), added(9, "<l>", false, true, false)});
  EXPECT_EQ(segments(strip, "<r>\u00a0 x"), "<8>[x]");
  EXPECT_EQ(segments(strip, "<r>\u180e x"), "<8>[\u180e x]") << "U+180E is not white space";
  EXPECT_EQ(segments(strip, "x\u00a0 <l>"), "[x]<9>");
  EXPECT_EQ(segments(strip, "x \u180e<l>"), "[x \u180e]<9>");
}

}  // namespace
