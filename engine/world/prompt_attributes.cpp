#include "engine/world/prompt_attributes.h"

#include "engine/world/scene_measures.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "engine/core/errors.h"
#include "engine/world/scene_captions.h"

namespace kvs::world {

namespace {

using Words = std::vector<std::string>;

// Lower-case words and the punctuation marks that end a phrase (a comma keeps
// "the sun on the left, low hills" from reading as a low sun). Hyphens and other
// characters only separate words, so "red-coloured" reads as "red coloured". With
// `slots`, "{name}" is kept as one element (a pattern's placeholder).
Words words_of(const std::string& text, bool slots = false) {
  Words out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (slots && ch == '{') {
      flush();
      const std::size_t end = text.find('}', i);
      out.push_back(text.substr(i, end - i + 1));
      i = end;
    } else if (ch < 128 && (std::isalnum(ch) || ch == '\'')) {
      word += static_cast<char>(std::tolower(ch));
    } else {
      flush();
      if (ch != 0 && std::strchr(",:;.!?", ch)) out.emplace_back(1, static_cast<char>(ch));
    }
  }
  flush();
  return out;
}

bool starts_at(const Words& words, std::size_t at, const Words& phrase) {
  if (phrase.size() > words.size() - at) return false;
  for (std::size_t k = 0; k < phrase.size(); ++k)
    if (words[at + k] != phrase[k]) return false;
  return true;
}

// What a slot's words say about the light.
struct Claim {
  std::optional<Side> side;
  std::optional<Height> height;
};

struct Alternative {
  Words words;
  Claim claim;
};

// Plain-English wording beside the grammar's own. Slots: {light} the sun or
// moon, {verb?} and {adj?} optional words between it and where it is; the
// grammar's {w}, {s}, {h}, {phase} take their own words and these extras.
constexpr const char* kPlainLightPatterns[] = {
    "{light} {verb?} {h} {w}",
    "{light} {verb?} {w}",
    "{light} {verb?} {h}",
    "{light} {verb?} {w}, {h} in the sky",
    "{light} {verb?} {w} and {h} in the sky",
    "{light} {verb?} {h} in the sky {w}",
    "{h} {adj?} {light}",
};
constexpr const char* kLightNouns[] = {"sun", "moon"};
constexpr const char* kLightVerbs[] = {"is",       "sits",  "sitting", "hangs", "hanging", "stands",
                                       "standing", "sets",  "setting", "rises", "rising",  "shines",
                                       "shining",  "glows", "glowing", "rests", "resting"};
constexpr const char* kLightAdjectives[] = {"half",  "new",     "bright", "pale",    "big",    "large",
                                            "small", "setting", "rising", "glowing", "golden", "silver",
                                            "white", "yellow",  "orange", "red"};

// Plain-English times of day, beside the grammar's time phrasings. The world has
// no morning: "morning" reads as dawn, the time whose light it describes.
const std::vector<std::pair<const char*, TimeOfDay>>& plain_times() {
  static const std::vector<std::pair<const char*, TimeOfDay>> kTimes = {
      {"day", TimeOfDay::day},          {"daytime", TimeOfDay::day},        {"daylight", TimeOfDay::day},
      {"midday", TimeOfDay::day},       {"noon", TimeOfDay::day},           {"afternoon", TimeOfDay::day},
      {"dawn", TimeOfDay::dawn},        {"sunrise", TimeOfDay::dawn},       {"daybreak", TimeOfDay::dawn},
      {"first light", TimeOfDay::dawn}, {"morning", TimeOfDay::dawn},       {"rising sun", TimeOfDay::dawn},
      {"sun rises", TimeOfDay::dawn},   {"evening", TimeOfDay::evening},    {"golden hour", TimeOfDay::evening},
      {"sunset", TimeOfDay::sunset},    {"sundown", TimeOfDay::sunset},     {"setting sun", TimeOfDay::sunset},
      {"sun sets", TimeOfDay::sunset},  {"sun setting", TimeOfDay::sunset}, {"dusk", TimeOfDay::dusk},
      {"twilight", TimeOfDay::dusk},    {"nightfall", TimeOfDay::dusk},     {"after sunset", TimeOfDay::dusk},
      {"night", TimeOfDay::night},      {"nighttime", TimeOfDay::night},    {"midnight", TimeOfDay::night},
      {"after dark", TimeOfDay::night},
  };
  return kTimes;
}

// Colour words beyond the names themselves.
const std::map<std::string, ColourName>& colour_words() {
  static const std::map<std::string, ColourName> kWords = [] {
    std::map<std::string, ColourName> m;
    for (int c = 0; c <= static_cast<int>(ColourName::black); ++c)
      m[to_string(static_cast<ColourName>(c))] = static_cast<ColourName>(c);
    m["gray"] = ColourName::grey;
    m["violet"] = ColourName::purple;
    m["turquoise"] = m["cyan"] = ColourName::teal;
    m["magenta"] = ColourName::pink;
    m["scarlet"] = m["crimson"] = ColourName::red;
    return m;
  }();
  return kWords;
}

// A clear sky in plain English, beside the grammar's clouds.none phrasings.
constexpr const char* kPlainClearSky[] = {"clear sky",       "clear skies",        "cloudless", "without clouds",
                                          "without a cloud", "not a single cloud", "no cloud",  "not a cloud",
                                          "clear blue sky",  "cloud free"};
// Words that ask for clouds wherever they stand outside a clear-sky phrasing.
constexpr const char* kCloudWords[] = {"cloud", "clouds", "cloudy", "overcast"};

std::optional<TimeOfDay> time_named(const std::string& name) {
  for (const TimeOfDay t :
       {TimeOfDay::day, TimeOfDay::dawn, TimeOfDay::evening, TimeOfDay::sunset, TimeOfDay::dusk, TimeOfDay::night})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

// The phrase tables, built once from the caption grammar and the lists above.
class Reader {
 public:
  Reader() {
    for (const Side s : {Side::left, Side::centre, Side::right}) {
      Claim at;
      at.side = s;
      for (const std::string& w : where_words(s)) slots_["{w}"].push_back({words_of(w), at});
      slots_["{s}"].push_back({words_of(to_string(s)), at});
      if (s == Side::centre) {
        for (const char* w : {"in the center", "at the center"}) slots_["{w}"].push_back({words_of(w), at});
        slots_["{s}"].push_back({{"center"}, at});
      } else {
        const std::string side = to_string(s);
        for (const std::string& w : {"on the " + side + " side", "on the " + side + " hand side", "from the " + side})
          slots_["{w}"].push_back({words_of(w), at});
      }
    }
    for (const Height h : {Height::high, Height::low}) {
      Claim at;
      at.height = h;
      slots_["{h}"].push_back({words_of(to_string(h)), at});
    }
    for (const char* w : {"high up", "overhead"}) slots_["{h}"].push_back({words_of(w), Claim{{}, Height::high}});
    for (const char* w : {"low down", "near the horizon", "on the horizon", "just above the horizon"})
      slots_["{h}"].push_back({words_of(w), Claim{{}, Height::low}});
    for (const std::string& w : moon_phase_words()) slots_["{phase}"].push_back({words_of(w), {}});
    for (const char* w : kLightNouns) slots_["{light}"].push_back({{w}, {}});
    for (const char* w : kLightVerbs) slots_["{verb?}"].push_back({{w}, {}});
    for (const char* w : kLightAdjectives) slots_["{adj?}"].push_back({{w}, {}});
    for (const std::string& w : moon_phase_words()) slots_["{adj?}"].push_back({words_of(w), {}});
    for (auto& [name, alternatives] : slots_) {
      // Longest first, so "on the left side" is not cut short at "on the left";
      // an optional slot may also be left out.
      std::stable_sort(alternatives.begin(), alternatives.end(),
                       [](const Alternative& a, const Alternative& b) { return a.words.size() > b.words.size(); });
      if (name.size() > 2 && name[name.size() - 2] == '?') alternatives.push_back({{}, {}});
    }

    for (const CaptionTemplate& t : caption_templates()) {
      const bool fixed = t.pattern.find('{') == std::string::npos;
      if (t.group.rfind("time.", 0) == 0) {
        const auto time = time_named(t.group.substr(5));
        if (!time || !fixed) throw InvalidArgumentError("the prompt reader does not know the time phrasing " + t.id);
        times_.push_back({words_of(t.pattern), *time});
      } else if (t.group.rfind("light.", 0) == 0) {
        add_light_pattern(t.pattern);
      } else if (t.group == "clouds.none") {
        clear_sky_.push_back(words_of(t.pattern));
      } else if (fixed) {
        fixed_.push_back(words_of(t.pattern));
      }
    }
    for (const auto& [phrase, time] : plain_times()) times_.push_back({words_of(phrase), time});
    for (const char* p : kPlainLightPatterns) add_light_pattern(p);
    for (const char* p : kPlainClearSky) clear_sky_.push_back(words_of(p));
    std::stable_sort(clear_sky_.begin(), clear_sky_.end(),
                     [](const Words& a, const Words& b) { return a.size() > b.size(); });
  }

  PromptAttributes read(const std::string& prompt) const {
    const Words words = words_of(prompt);
    std::vector<bool> taken(words.size(), false);
    PromptAttributes out;

    // Times: the longest phrasing at each word, left to right ("at dusk, after
    // sunset" is dusk, not dusk and sunset); the words it covers are taken.
    std::set<TimeOfDay> times;
    for (std::size_t i = 0; i < words.size();) {
      std::size_t best = 0;
      TimeOfDay time = TimeOfDay::unspecified;
      for (const auto& [phrase, t] : times_)
        if (phrase.size() > best && starts_at(words, i, phrase)) {
          best = phrase.size();
          time = t;
        }
      if (best == 0) {
        ++i;
        continue;
      }
      times.insert(time);
      for (std::size_t k = 0; k < best; ++k) taken[i + k] = true;
      i += best;
    }
    if (times.size() == 1) out.time = *times.begin();

    // The grammar's fixed phrasings take their words too, for the colour reading.
    for (std::size_t i = 0; i < words.size(); ++i)
      for (const Words& phrase : fixed_)
        if (starts_at(words, i, phrase))
          for (std::size_t k = 0; k < phrase.size(); ++k) taken[i + k] = true;

    // Colours: every colour word left free, unless denied.
    for (std::size_t i = 0; i < words.size(); ++i) {
      const auto it = colour_words().find(words[i]);
      if (taken[i] || it == colour_words().end()) continue;
      if (i > 0 && (words[i - 1] == "no" || words[i - 1] == "not" || words[i - 1] == "without")) continue;
      if (std::find(out.colours.begin(), out.colours.end(), it->second) == out.colours.end())
        out.colours.push_back(it->second);
    }

    // The sun or moon: what every pattern matching anywhere says of its side and height.
    std::set<Side> sides;
    std::set<Height> heights;
    for (std::size_t i = 0; i < words.size(); ++i)
      for (const Words& pattern : light_) {
        Claim claim;
        if (!match(pattern, 0, words, i, claim)) continue;
        if (claim.side) sides.insert(*claim.side);
        if (claim.height) heights.insert(*claim.height);
      }
    if (sides.size() == 1) out.light_side = *sides.begin();
    if (heights.size() == 1) out.light_height = *heights.begin();

    // Clouds: a clear-sky phrasing takes its words; a cloud word left over (not
    // denied) asks for clouds.
    std::vector<bool> sky(words.size(), false);
    bool clear = false, cloudy = false;
    for (std::size_t i = 0; i < words.size(); ++i)
      for (const Words& phrase : clear_sky_)
        if (!sky[i] && starts_at(words, i, phrase)) {
          clear = true;
          for (std::size_t k = 0; k < phrase.size(); ++k) sky[i + k] = true;
        }
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (sky[i] || std::find(std::begin(kCloudWords), std::end(kCloudWords), words[i]) == std::end(kCloudWords))
        continue;
      if (i > 0 && (words[i - 1] == "no" || words[i - 1] == "not" || words[i - 1] == "without")) continue;
      cloudy = true;
    }
    if (clear != cloudy) out.clouds = clear ? CloudCover::clear : CloudCover::cloudy;
    return out;
  }

 private:
  void add_light_pattern(const std::string& pattern) {
    Words p = words_of(pattern, true);
    for (const std::string& e : p)
      if (e.front() == '{' && !slots_.count(e))
        throw InvalidArgumentError("the prompt reader does not know the placeholder " + e + " of '" + pattern + "'");
    light_.push_back(std::move(p));
  }

  // Whether `pattern` from element e matches `words` from word w; the first way
  // it does (longer slot words first) fills `claim`.
  bool match(const Words& pattern, std::size_t e, const Words& words, std::size_t w, Claim& claim) const {
    if (e == pattern.size()) return true;
    const std::string& element = pattern[e];
    if (element.front() != '{')
      return w < words.size() && words[w] == element && match(pattern, e + 1, words, w + 1, claim);
    for (const Alternative& a : slots_.at(element)) {
      if (!starts_at(words, w, a.words)) continue;
      Claim next = claim;
      if (a.claim.side) next.side = a.claim.side;
      if (a.claim.height) next.height = a.claim.height;
      if (match(pattern, e + 1, words, w + a.words.size(), next)) {
        claim = next;
        return true;
      }
    }
    return false;
  }

  std::map<std::string, std::vector<Alternative>> slots_;
  std::vector<std::pair<Words, TimeOfDay>> times_;
  std::vector<Words> fixed_;      // the grammar's phrasings without placeholders (not times)
  std::vector<Words> light_;      // patterns of the sun or moon with slots
  std::vector<Words> clear_sky_;  // phrasings of a clear sky, longest first
};

}  // namespace

PromptAttributes read_prompt_attributes(const std::string& prompt) {
  static const Reader kReader;
  return kReader.read(prompt);
}

PromptAttributes measurable_attributes(const PromptAttributes& asked, std::optional<int> class_id) {
  if (!class_id) return asked;
  PromptAttributes out;
  out.time = asked.time;
  if (light_side_measurable(*class_id)) out.light_side = asked.light_side;
  if (light_height_measurable(*class_id)) out.light_height = asked.light_height;
  if (clouds_measurable(*class_id)) out.clouds = asked.clouds;
  if (colour_measurable(*class_id))
    for (const ColourName c : asked.colours)
      if (c <= ColourName::pink) {
        out.colours.push_back(c);
        break;
      }
  return out;
}

}  // namespace kvs::world
