#include "engine/text/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/core/errors.h"
#include "engine/text/utf8.h"

namespace kvs::text {

struct UnicodeRegex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// Match data sized for the pattern, freed on scope exit.
struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
    if (!data) throw std::bad_alloc();
  }
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
};

}  // namespace

UnicodeRegex::UnicodeRegex(const std::string& pattern, Syntax syntax, const std::string& where)
    : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  // A literal takes no Unicode property or line options (PCRE2 refuses them).
  const uint32_t options = PCRE2_UTF | (syntax == Syntax::Literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error, &offset,
                              nullptr);
  if (!impl_->code) {
    throw FormatError(where + ": pattern '" + pattern + "' does not compile: " + pcre2_message(error) + " at offset " +
                      std::to_string(offset));
  }
  // JIT is an optimisation only: without it (a platform PCRE2 lacks it for) the
  // interpreter gives the same matches.
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

UnicodeRegex::~UnicodeRegex() = default;
UnicodeRegex::UnicodeRegex(UnicodeRegex&&) noexcept = default;
UnicodeRegex& UnicodeRegex::operator=(UnicodeRegex&&) noexcept = default;

std::vector<std::pair<size_t, size_t>> UnicodeRegex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> found;
  MatchData md(impl_->code);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  // Where the last reported match ended; none yet.
  size_t last_end = std::string_view::npos;
  // PCRE2 checks the whole subject's UTF-8 on every call unless told not to:
  // once is enough, or a long text with many matches costs quadratic time.
  uint32_t check = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, check, md.data, nullptr);
    check = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw InvalidArgumentError("pattern '" + pattern_ + "' failed on input: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    if (ov[0] == ov[1] && ov[1] == last_end) {
      // An empty match where the last match ended (right after "xx" for "x*",
      // or the same empty match found again) is not reported, as the Oniguruma
      // binding's find_iter that the library uses skips it; the search goes on
      // one code point later.
      if (start >= text.size()) break;
      start += decode_code_point(text, start).length;
      continue;
    }
    found.emplace_back(ov[0], ov[1]);
    start = last_end = ov[1];
  }
  return found;
}

bool UnicodeRegex::matches_at(std::string_view text, size_t pos) const {
  MatchData md(impl_->code);
  // Called once per code point while scanning: the caller's text is valid
  // UTF-8 already, and checking it on every call would make scans quadratic.
  const int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos,
                             PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, md.data, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) throw InvalidArgumentError("pattern '" + pattern_ + "' failed on input: " + pcre2_message(rc));
  return true;
}

}  // namespace kvs::text
