#include "engine/text/added_tokens.h"

#include <algorithm>

#include "engine/text/unicode_regex.h"
#include "engine/text/utf8.h"

namespace kvs::text {
namespace {

// The library tests an added token's neighbours with the Rust regex crate's \w
// and \s, written out here: PCRE2's own \w leaves out marks, connector
// punctuation other than '_' and joiners, and takes other numbers such as '²';
// its \s takes U+180E, which Unicode no longer counts as white space.
const UnicodeRegex& word_char() {
  static const UnicodeRegex re(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])", UnicodeRegex::Syntax::Regex,
                               "word character");
  return re;
}

const UnicodeRegex& space_char() {
  static const UnicodeRegex re(R"(\p{White_Space})", UnicodeRegex::Syntax::Regex, "white space");
  return re;
}

// Start of the code point that ends at `end` (text[..end] valid UTF-8, end > 0).
size_t previous_code_point(const std::string& text, size_t end) {
  size_t p = end - 1;
  while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
  return p;
}

bool word_before(const std::string& text, size_t pos) {
  return pos > 0 && word_char().matches_at(text, previous_code_point(text, pos));
}

bool word_after(const std::string& text, size_t pos) { return pos < text.size() && word_char().matches_at(text, pos); }

// Where the white space that ends at `pos` begins (not before `floor`).
size_t skip_space_back(const std::string& text, size_t pos, size_t floor) {
  while (pos > floor) {
    const size_t prev = previous_code_point(text, pos);
    if (!space_char().matches_at(text, prev)) break;
    pos = prev;
  }
  return std::max(pos, floor);
}

size_t skip_space_forward(const std::string& text, size_t pos) {
  while (pos < text.size() && space_char().matches_at(text, pos)) pos += decode_code_point(text, pos).length;
  return pos;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::erase_if(tokens_, [](const AddedToken& t) { return t.content.empty(); });
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
}

std::vector<TextSegment> AddedTokenMatcher::split(const std::string& text) const {
  std::vector<TextSegment> out;
  size_t done = 0;  // text before it is in `out`
  size_t pos = 0;   // where the search for the next match goes on
  while (pos < text.size()) {
    const AddedToken* found = nullptr;
    for (const AddedToken& t : tokens_) {
      if (text.compare(pos, t.content.size(), t.content) == 0) {
        found = &t;
        break;
      }
    }
    if (!found) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + found->content.size();
    pos = stop;
    // A rejected single-word match is still consumed: the search resumes after
    // it, as a non-overlapping scan does.
    if (found->single_word && (word_before(text, start) || word_after(text, stop))) continue;
    if (found->lstrip) start = skip_space_back(text, start, done);
    if (found->rstrip) stop = skip_space_forward(text, stop);
    if (start > done) out.push_back({text.substr(done, start - done), std::nullopt});
    out.push_back({text.substr(start, stop - start), found->id});
    done = pos = stop;
  }
  if (done < text.size()) out.push_back({text.substr(done), std::nullopt});
  return out;
}

}  // namespace kvs::text
