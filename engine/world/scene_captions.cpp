#include "engine/world/scene_captions.h"

#include <cctype>
#include <map>
#include <string>
#include <utility>

#include "engine/core/errors.h"
#include "engine/world/scene_rng.h"
#include "engine/world/scene_world.h"

namespace kvs::world {

namespace {

constexpr CaptionSplit T = CaptionSplit::train;
constexpr CaptionSplit H = CaptionSplit::held_out;

struct Entry {
  const char* group;
  const char* pattern;
  CaptionSplit split;
};

// The grammar (placeholders: see caption_templates() in the header).
// The last template of every group is held out (one per group keeps held-out
// captions as varied as the facts while most wordings stay for training), and
// two of the seven word orders are. A held-out subject or time of day is a new
// arrangement of words that training captions use ("a field of flowers" beside
// "fields of flowers" and "a flower field"), not a synonym training never shows
// ("a meadow", "at nightfall"): a model that learns its English only from these
// captions cannot know what a word it never read means, so such a phrasing
// would measure the vocabulary of the grammar and not whether the model
// generalises to new wordings.
const std::vector<Entry>& grammar() {
  static const std::vector<Entry> kGrammar = {
      // Subjects, one group per class (tiling: per pattern).
      {"subject.sunset_sea", "a seascape", T},
      {"subject.sunset_sea", "the open sea", T},
      {"subject.sunset_sea", "a view over the sea", T},
      {"subject.sunset_sea", "a wide view of the open sea", H},
      {"subject.mountains", "snowy mountains", T},
      {"subject.mountains", "a mountain range", T},
      {"subject.mountains", "alpine peaks", T},
      {"subject.mountains", "high mountains", H},
      {"subject.lake", "a lake", T},
      {"subject.lake", "a still lake", T},
      {"subject.lake", "a lake with a wooded shore", T},
      {"subject.lake", "a calm lake", H},
      {"subject.night_sky", "a starry sky", T},
      {"subject.night_sky", "the night sky", T},
      {"subject.night_sky", "a sky full of stars", T},
      {"subject.night_sky", "a dark sky of stars", H},
      {"subject.forest", "a pine forest", T},
      {"subject.forest", "a conifer forest", T},
      {"subject.forest", "a forest of firs", T},
      {"subject.forest", "a dense forest of pines", H},
      {"subject.desert", "a desert", T},
      {"subject.desert", "sand dunes", T},
      {"subject.desert", "a dune field", T},
      {"subject.desert", "the desert sands", H},
      {"subject.city_dusk", "a city skyline", T},
      {"subject.city_dusk", "a city", T},
      {"subject.city_dusk", "tall buildings", T},
      {"subject.city_dusk", "the skyline of a city", H},
      {"subject.still_life", "a still life", T},
      {"subject.still_life", "objects on a table", T},
      {"subject.still_life", "a tabletop still life", T},
      {"subject.still_life", "a still life of objects", H},
      {"subject.hills", "rolling hills", T},
      {"subject.hills", "grassy hills", T},
      {"subject.hills", "a hilly landscape", T},
      {"subject.hills", "gentle hills", H},
      {"subject.underwater", "an underwater scene", T},
      {"subject.underwater", "the sea floor", T},
      {"subject.underwater", "a view under the sea", T},
      {"subject.underwater", "a scene on the sea floor", H},
      {"subject.flower_fields", "a flower field", T},
      {"subject.flower_fields", "fields of flowers", T},
      {"subject.flower_fields", "rows of flowers", T},
      {"subject.flower_fields", "a field of flowers", H},
      {"pattern.checkerboard", "a checkerboard", T},
      {"pattern.checkerboard", "a checked pattern", T},
      {"pattern.checkerboard", "a pattern of checks", T},
      {"pattern.checkerboard", "a grid of checks", H},
      {"pattern.diamonds", "a diamond pattern", T},
      {"pattern.diamonds", "diamond tiles", T},
      {"pattern.diamonds", "a harlequin pattern of diamonds", T},
      {"pattern.diamonds", "a tiling of diamonds", H},
      {"pattern.stripes", "a striped pattern", T},
      {"pattern.stripes", "bold stripes", T},
      {"pattern.stripes", "a pattern of stripes", T},
      {"pattern.stripes", "a banded pattern of stripes", H},
      {"pattern.triangles", "a triangle pattern", T},
      {"pattern.triangles", "triangular tiles", T},
      {"pattern.triangles", "a tiling of triangles", T},
      {"pattern.triangles", "a mosaic of triangles", H},
      {"pattern.hexagons", "a hexagon pattern", T},
      {"pattern.hexagons", "a honeycomb of hexagons", T},
      {"pattern.hexagons", "hexagonal tiles", T},
      {"pattern.hexagons", "a mosaic of hexagons", H},
      {"pattern.rings", "concentric rings", T},
      {"pattern.rings", "a ring pattern", T},
      {"pattern.rings", "a target of rings", T},
      {"pattern.rings", "rings within rings", H},
      {"pattern.squares", "concentric squares", T},
      {"pattern.squares", "nested squares", T},
      {"pattern.squares", "a pattern of squares in squares", T},
      {"pattern.squares", "squares within squares", H},
      // Times of day.
      {"time.day", "in daylight", T},
      {"time.day", "during the day", T},
      {"time.day", "on a bright day", T},
      {"time.day", "by day", H},
      {"time.dawn", "at dawn", T},
      {"time.dawn", "at sunrise", T},
      {"time.dawn", "in the pink light of dawn", T},
      {"time.dawn", "at first light of dawn", H},
      {"time.evening", "in the evening", T},
      {"time.evening", "in golden evening light", T},
      {"time.evening", "on a warm evening", T},
      {"time.evening", "at golden hour in the evening", H},
      {"time.sunset", "at sunset", T},
      {"time.sunset", "as the sun sets", T},
      {"time.sunset", "in the setting sun", T},
      {"time.sunset", "at the hour of sunset", H},
      {"time.dusk", "at dusk", T},
      {"time.dusk", "in the twilight", T},
      {"time.dusk", "at dusk, after sunset", T},
      {"time.dusk", "in the twilight of dusk", H},
      {"time.night", "at night", T},
      {"time.night", "by night", T},
      {"time.night", "in the dark of night", T},
      {"time.night", "late at night", H},
      // The sun or moon.
      {"light.sun", "the sun {h} {w}", T},
      {"light.sun", "a {h} sun {w}", T},
      {"light.sun", "the sun {w}, {h} in the sky", T},
      {"light.sun", "the sun sitting {h} {w}", H},
      {"light.moon", "a {phase} moon {h} {w}", T},
      {"light.moon", "the {phase} moon {w}, {h} in the sky", T},
      {"light.moon", "a {h} {phase} moon {w}", T},
      {"light.moon", "the {phase} moon hanging {h} {w}", H},
      {"light.sunlit", "sunlight from the {s}", T},
      {"light.sunlit", "light falling from the {s}", T},
      {"light.sunlit", "peaks lit from the {s}", T},
      {"light.sunlit", "the sun shining from the {s}", H},
      {"light.rays", "sun rays {w}", T},
      {"light.rays", "beams of light {w}", T},
      {"light.rays", "light rays falling {w}", T},
      {"light.rays", "shafts of sunlight {w}", H},
      // Colours.
      {"colours", "{cs} tones", T},
      {"colours", "shades of {cs}", T},
      {"colours", "a {cs} palette", T},
      {"colours", "colours of {cs}", H},
      // Weather.
      {"clouds.none", "a clear sky", T},
      {"clouds.none", "a cloudless sky", T},
      {"clouds.none", "no clouds", T},
      {"clouds.none", "not a cloud in the sky", H},
      {"clouds.one", "a single cloud", T},
      {"clouds.one", "one cloud", T},
      {"clouds.one", "a lone cloud", T},
      {"clouds.one", "just one cloud", H},
      {"clouds.many", "{N} clouds", T},
      {"clouds.many", "{N} clouds in the sky", T},
      {"clouds.many", "a sky with {N} clouds", T},
      {"clouds.many", "{N} drifting clouds", H},
      {"mist", "mist", T},
      {"mist", "a misty haze", T},
      {"mist", "fog between the trees", T},
      {"mist", "low-lying fog", H},
      // Objects.
      {"object.one.coloured", "a {c} {n} {w}", T},
      {"object.one.coloured", "a {n} in {c} {w}", T},
      {"object.one.coloured", "one {c} {n} {w}", T},
      {"object.one.coloured", "a {c}-coloured {n} {w}", H},
      {"object.one", "a {n} {w}", T},
      {"object.one", "one {n} {w}", T},
      {"object.one", "a single {n} {w}", T},
      {"object.one", "a lone {n} {w}", H},
      {"object.many.coloured", "{N} {c} {ns}", T},
      {"object.many.coloured", "{N} {ns} in {c}", T},
      {"object.many.coloured", "a group of {N} {c} {ns}", T},
      {"object.many.coloured", "{N} {c}-coloured {ns}", H},
      {"object.many", "{N} {ns}", T},
      {"object.many", "a group of {N} {ns}", T},
      {"object.many", "exactly {N} {ns}", T},
      {"object.many", "a cluster of {N} {ns}", H},
      // Features.
      {"feature.milky_way", "the Milky Way", T},
      {"feature.milky_way", "a band of the Milky Way", T},
      {"feature.milky_way", "the Milky Way across the sky", T},
      {"feature.milky_way", "the faint glow of the Milky Way", H},
      {"feature.trees", "a line of pine trees", T},
      {"feature.trees", "dark fir trees", T},
      {"feature.trees", "conifers in the foreground", T},
      {"feature.trees", "a row of evergreen pines", H},
      {"feature.snowy_peaks", "snowy peaks behind", T},
      {"feature.snowy_peaks", "distant snowy mountains", T},
      {"feature.snowy_peaks", "snow on the far peaks", T},
      {"feature.snowy_peaks", "snow-capped summits beyond", H},
      {"feature.hills_behind", "low hills behind", T},
      {"feature.hills_behind", "distant hills", T},
      {"feature.hills_behind", "hills on the far shore", T},
      {"feature.hills_behind", "a range of far-off hills", H},
      {"feature.path", "a winding path", T},
      {"feature.path", "a footpath", T},
      {"feature.path", "a path through the grass", T},
      {"feature.path", "a path winding down the slope", H},
      {"feature.tablecloth", "a tablecloth", T},
      {"feature.tablecloth", "a cloth-covered table", T},
      {"feature.tablecloth", "a table laid with a cloth", T},
      {"feature.tablecloth", "a table under a linen cloth", H},
      {"feature.wooden_table", "a wooden table", T},
      {"feature.wooden_table", "a table of wood", T},
      {"feature.wooden_table", "a brown wooden tabletop", T},
      {"feature.wooden_table", "a table of polished wood", H},
      {"feature.tilted", "a tilted layout", T},
      {"feature.tilted", "tiles set at an angle", T},
      {"feature.tilted", "a slanted grid, tilted", T},
      {"feature.tilted", "a grid tilted off square", H},
      {"feature.bubbles", "rising bubbles", T},
      {"feature.bubbles", "a trail of bubbles", T},
      {"feature.bubbles", "air bubbles", T},
      {"feature.bubbles", "a stream of bubbles", H},
      // Word orders.
      {"order", "{S}{T}, {M}", T},
      {"order", "{S}{T} with {M}", T},
      {"order", "{T}, {S}: {M}", T},
      // Train orders that name the subject last, so that a model learns the
      // subject's words wherever they stand and not only at the start (the
      // held-out orders below put the subject late in other words).
      {"order", "{M}, and {S}{T}", T},
      {"order", "{T}, {M}; {S}", T},
      {"order", "{M} in a picture of {S}{T}", H},
      {"order", "{S} showing {M}, {T}", H},
  };
  return kGrammar;
}

struct Grammar {
  std::vector<CaptionTemplate> templates;
  std::map<std::string, std::vector<std::size_t>> by_group[2];  // split → group → indices
};

const Grammar& compiled() {
  static const Grammar kCompiled = [] {
    Grammar g;
    std::map<std::string, int> counts;
    for (const Entry& e : grammar()) {
      const int index = counts[e.group]++;
      g.by_group[static_cast<int>(e.split)][e.group].push_back(g.templates.size());
      g.templates.push_back({std::string(e.group) + "." + std::to_string(index), e.group, e.pattern, e.split});
    }
    return g;
  }();
  return kCompiled;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Collapses runs of spaces, drops spaces before commas and at the ends, and turns
// "a" into "an" before a vowel.
std::string tidy(const std::string& text) {
  std::string s;
  for (const char ch : text) {
    if (ch == ' ' && (s.empty() || s.back() == ' ')) continue;
    if ((ch == ',' || ch == ':') && !s.empty() && s.back() == ' ') s.pop_back();
    s += ch;
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    const bool word_a = s[i] == 'a' && (i == 0 || s[i - 1] == ' ') && i + 2 < s.size() && s[i + 1] == ' ';
    if (word_a && std::string("aeiou").find(s[i + 2]) != std::string::npos) out += 'n';
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) s += i + 1 == items.size() ? " and " : ", ";
    s += items[i];
  }
  return s;
}

class Builder {
 public:
  Builder(const SceneFacts& facts, uint64_t seed, CaptionSplit split)
      : rng_(detail::splitmix64_mix(
            seed ^ detail::splitmix64_mix(0xCA9710ull + facts.seed * 31ull + static_cast<uint64_t>(facts.class_id)))),
        split_(split) {}

  // A phrasing of `group` in this split with its placeholders filled in.
  std::string phrase(const std::string& group, const std::map<std::string, std::string>& values = {}) {
    const Grammar& g = compiled();
    const auto& groups = g.by_group[static_cast<int>(split_)];
    const auto it = groups.find(group);
    if (it == groups.end()) throw InvalidArgumentError("the caption grammar has no phrasing for '" + group + "'");
    const std::size_t index = it->second[static_cast<std::size_t>(rng_.below(static_cast<int>(it->second.size())))];
    caption_.templates.push_back(g.templates[index].id);
    std::string s = g.templates[index].pattern;
    for (const auto& [key, value] : values) s = replace_all(s, "{" + key + "}", value);
    return s;
  }

  std::string where(Side side) {
    const std::vector<std::string>& words = where_words(side);
    return words[static_cast<std::size_t>(rng_.below(static_cast<int>(words.size())))];
  }

  void mention(const std::string& fact) { caption_.facts.push_back(fact); }
  detail::SceneRng& rng() { return rng_; }
  Caption& caption() { return caption_; }

 private:
  detail::SceneRng rng_;
  CaptionSplit split_;
  Caption caption_;
};

std::string colour_list(const std::vector<ColourName>& colours) {
  std::vector<std::string> words;
  for (const ColourName c : colours) words.push_back(to_string(c));
  return join_list(words);
}

std::string light_phrase(Builder& b, const SceneFacts& facts) {
  const SceneLight& l = facts.light;
  if (l.kind == LightKind::moon) {
    b.mention("light.side");
    b.mention("light.height");
    b.mention("light.phase");
    return b.phrase("light.moon", {{"phase", moon_phase_words()[l.crescent ? 1 : 0]},
                                   {"h", to_string(l.height)},
                                   {"w", b.where(l.side)}});
  }
  b.mention("light.side");
  if (l.disc) {
    b.mention("light.height");
    return b.phrase("light.sun", {{"h", to_string(l.height)}, {"w", b.where(l.side)}});
  }
  // Sunlight seen only by its effect: lit faces on land, rays under water.
  if (facts.water == Water::underwater) return b.phrase("light.rays", {{"w", b.where(l.side)}});
  return b.phrase("light.sunlit", {{"s", to_string(l.side)}});
}

std::string object_phrase(Builder& b, const SceneObject& o) {
  b.mention("object:" + o.noun);
  std::map<std::string, std::string> v = {{"n", o.noun},
                                          {"ns", o.plural},
                                          {"N", number_word(o.count)},
                                          {"w", o.placed ? b.where(o.side) : ""}};
  if (o.coloured) v["c"] = to_string(o.colour);
  const std::string group = std::string("object.") + (o.count == 1 ? "one" : "many") + (o.coloured ? ".coloured" : "");
  return b.phrase(group, v);
}

}  // namespace

const char* to_string(CaptionSplit s) { return s == CaptionSplit::train ? "train" : "held-out"; }

CaptionSplit parse_caption_split(const std::string& text) {
  if (text == "train") return CaptionSplit::train;
  if (text == "held-out") return CaptionSplit::held_out;
  throw InvalidArgumentError("unknown caption split '" + text + "' (expected train or held-out)");
}

const std::vector<CaptionTemplate>& caption_templates() { return compiled().templates; }

const std::vector<std::string>& where_words(Side side) {
  static const std::vector<std::string> kWords[3] = {{"on the left", "at the left", "to the left"},
                                                     {"in the centre", "in the middle", "at the centre"},
                                                     {"on the right", "at the right", "to the right"}};
  return kWords[static_cast<int>(side)];
}

const std::vector<std::string>& moon_phase_words() {
  static const std::vector<std::string> kWords = {"full", "crescent"};
  return kWords;
}

std::string number_word(int n) {
  static const char* kWords[] = {"no",    "one",   "two",  "three", "four",   "five",  "six",
                                 "seven", "eight", "nine", "ten",   "eleven", "twelve"};
  if (n >= 0 && n <= 12) return kWords[n];
  return std::to_string(n);
}

Caption scene_caption(const SceneFacts& facts, uint64_t caption_seed, CaptionSplit split) {
  const auto& classes = scene_classes();
  if (facts.class_id < 0 || facts.class_id >= static_cast<int>(classes.size()))
    throw InvalidArgumentError("scene facts of unknown class " + std::to_string(facts.class_id));
  Builder b(facts, caption_seed, split);

  // The subject: the class, or for a tiling its pattern.
  std::string subject;
  if (!facts.pattern.empty()) {
    b.mention("pattern");
    subject = b.phrase("pattern." + facts.pattern);
  } else {
    b.mention("class");
    subject = b.phrase("subject." + classes[static_cast<std::size_t>(facts.class_id)].name);
  }
  std::string time;
  if (facts.time != TimeOfDay::unspecified) {
    b.mention("time");
    time = b.phrase(std::string("time.") + to_string(facts.time));
  }

  // The other phrases, in a canonical order first, then shuffled by the caption seed.
  std::vector<std::string> mods;
  if (facts.light.kind != LightKind::none) mods.push_back(light_phrase(b, facts));
  if (!facts.colours.empty()) {
    b.mention("colours");
    mods.push_back(b.phrase("colours", {{"cs", colour_list(facts.colours)}}));
  }
  if (facts.clouds >= 0) {
    b.mention("clouds");
    const std::string group = facts.clouds == 0 ? "clouds.none" : (facts.clouds == 1 ? "clouds.one" : "clouds.many");
    mods.push_back(b.phrase(group, {{"N", number_word(facts.clouds)}}));
  }
  if (facts.mist) {
    b.mention("mist");
    mods.push_back(b.phrase("mist"));
  }
  for (const SceneObject& o : facts.objects) mods.push_back(object_phrase(b, o));
  for (const std::string& f : facts.features) {
    b.mention("feature:" + f);
    mods.push_back(b.phrase("feature." + f));
  }
  for (std::size_t i = mods.size(); i > 1; --i)
    std::swap(mods[i - 1], mods[static_cast<std::size_t>(b.rng().below(static_cast<int>(i)))]);

  std::string order = b.phrase("order");
  const std::string list = join_list(mods);
  // Orders written for a caption with a time and other phrases; without them the
  // joining words go too.
  if (time.empty()) {
    if (order.rfind("{T}, ", 0) == 0) order = order.substr(5);
    if (order.size() >= 5 && order.compare(order.size() - 5, 5, ", {T}") == 0) order.resize(order.size() - 5);
  }
  if (list.empty()) {
    order = replace_all(order, ", {M}", "");
    order = replace_all(order, " with {M}", "");
    order = replace_all(order, ": {M}", "");
    order = replace_all(order, "{M} in a picture of ", "");
    order = replace_all(order, " showing {M}", "");
    order = replace_all(order, "{M}, and ", "");
    order = replace_all(order, "{M}; ", "");
  }
  const bool time_first = order.rfind("{T}", 0) == 0;
  order = replace_all(order, "{T}", time.empty() ? "" : (time_first ? time : " " + time));
  order = replace_all(order, "{S}", subject);
  order = replace_all(order, "{M}", list);
  Caption out = std::move(b.caption());
  out.text = tidy(order);
  return out;
}

}  // namespace kvs::world
