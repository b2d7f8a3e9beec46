// The caption grammar (engine/world/scene_captions.h): captions mention every fact
// they are built from (checked against our own vocabulary, not the grammar's
// tables), every template is reachable, the train and held-out splits never share
// a template, and captions are deterministic.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/world/scene_captions.h"
#include "engine/world/scene_world.h"

using namespace kvs;
using namespace kvs::world;

namespace {

constexpr uint64_t kSeedsPerClass = 150;

bool contains_any(const std::string& text, const std::vector<std::string>& words) {
  for (const std::string& w : words)
    if (text.find(w) != std::string::npos) return true;
  return false;
}

// Words that show a fact is mentioned, independent of the grammar's phrasings.
const std::map<std::string, std::vector<std::string>>& vocabulary() {
  static const std::map<std::string, std::vector<std::string>> kWords = {
      {"class:sunset_sea", {"sea", "ocean"}},
      {"class:mountains", {"mountain", "peaks"}},
      {"class:lake", {"lake"}},
      {"class:night_sky", {"star", "sky"}},
      {"class:forest", {"forest", "woodland"}},
      {"class:desert", {"desert", "dune"}},
      {"class:city_dusk", {"city", "buildings", "skyline"}},
      {"class:still_life", {"still life", "still-life", "table"}},
      {"class:hills", {"hill"}},
      {"class:underwater", {"underwater", "sea floor", "under the sea", "beneath the waves"}},
      {"class:flower_fields", {"flower"}},
      {"pattern:checkerboard", {"check", "chessboard"}},
      {"pattern:diamonds", {"diamond"}},
      {"pattern:stripes", {"stripe"}},
      {"pattern:triangles", {"triang"}},
      {"pattern:hexagons", {"hexagon"}},
      {"pattern:rings", {"ring"}},
      {"pattern:squares", {"square"}},
      {"time:day", {"day"}},
      {"time:dawn", {"dawn", "sunrise"}},
      {"time:evening", {"evening"}},
      {"time:sunset", {"sunset", "sun sets", "setting sun", "sundown"}},
      {"time:dusk", {"dusk", "twilight", "nightfall"}},
      {"time:night", {"night"}},
      {"side:left", {"left"}},
      {"side:centre", {"centre", "middle"}},
      {"side:right", {"right"}},
      {"height:high", {"high"}},
      {"height:low", {"low"}},
      {"feature:milky_way", {"Milky Way"}},
      {"feature:trees", {"pine", "fir", "conifer"}},
      {"feature:snowy_peaks", {"snow"}},
      {"feature:hills_behind", {"hills"}},
      {"feature:path", {"path"}},
      {"feature:tablecloth", {"cloth"}},
      {"feature:wooden_table", {"wood"}},
      {"feature:tilted", {"tilted", "angle"}},
      {"feature:bubbles", {"bubble"}},
  };
  return kWords;
}

const std::vector<std::string>& words_for(const std::string& key) {
  static const std::vector<std::string> kNone;
  const auto it = vocabulary().find(key);
  EXPECT_NE(it, vocabulary().end()) << "no test vocabulary for " << key;
  return it == vocabulary().end() ? kNone : it->second;
}

// Checks that `caption` mentions every fact in `f`; returns a description of the
// first fact missing, or "".
std::string missing_fact(const SceneFacts& f, const Caption& caption) {
  const std::string& t = caption.text;
  auto listed = [&](const std::string& key) {
    for (const std::string& k : caption.facts)
      if (k == key) return true;
    return false;
  };
  auto need = [&](const std::string& key, const std::vector<std::string>& words) -> std::string {
    if (!listed(key)) return key + " not listed";
    if (!contains_any(t, words)) return key + " not in the text";
    return "";
  };
  std::string m;
  const std::string cls = scene_classes()[static_cast<std::size_t>(f.class_id)].name;
  if (!(m = f.pattern.empty() ? need("class", words_for("class:" + cls))
                              : need("pattern", words_for("pattern:" + f.pattern)))
           .empty())
    return m;
  if (f.time != TimeOfDay::unspecified &&
      !(m = need("time", words_for(std::string("time:") + to_string(f.time)))).empty())
    return m;
  if (f.light.kind != LightKind::none) {
    if (!(m = need("light.side", words_for(std::string("side:") + to_string(f.light.side)))).empty()) return m;
    if (f.light.disc &&
        !(m = need("light.height", words_for(std::string("height:") + to_string(f.light.height)))).empty())
      return m;
    if (f.light.kind == LightKind::moon) {
      if (!(m = need("light.phase", {f.light.crescent ? "crescent" : "full"})).empty()) return m;
      if (t.find("moon") == std::string::npos) return "moon not named";
    }
  }
  for (const ColourName c : f.colours)
    if (!(m = need("colours", {to_string(c)})).empty()) return m;
  if (f.clouds == 0 && !(m = need("clouds", {"clear", "cloudless", "no clouds", "not a cloud"})).empty()) return m;
  if (f.clouds == 1 && !(m = need("clouds", {"single cloud", "one cloud", "lone cloud"})).empty()) return m;
  if (f.clouds > 1 && !(m = need("clouds", {number_word(f.clouds) + " "})).empty()) return m;
  if (f.mist && !(m = need("mist", {"mist", "fog", "haze"})).empty()) return m;
  for (const SceneObject& o : f.objects) {
    const std::string key = "object:" + o.noun;
    if (!(m = need(key, {o.count == 1 ? o.noun : o.plural})).empty()) return m;
    if (o.count > 1 && !(m = need(key, {number_word(o.count) + " "})).empty()) return m + " (count)";
    if (o.coloured && !(m = need(key, {to_string(o.colour)})).empty()) return m + " (colour)";
    if (o.placed && !(m = need(key, words_for(std::string("side:") + to_string(o.side)))).empty()) return m + " (side)";
  }
  for (const std::string& feature : f.features)
    if (!(m = need("feature:" + feature, words_for("feature:" + feature))).empty()) return m;
  return "";
}

struct Coverage {
  std::set<std::string> used[2];  // split → template ids
  int captions = 0;
};

// Captions of every class over many seeds in both splits; checks each as it goes.
const Coverage& coverage() {
  static const Coverage kCoverage = [] {
    Coverage cov;
    for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
      for (uint64_t seed = 0; seed < kSeedsPerClass; ++seed) {
        const SceneFacts f = scene_facts(c, seed % 2 ? kHeldOutSeedBase + seed : seed);
        for (const CaptionSplit split : {CaptionSplit::train, CaptionSplit::held_out})
          for (uint64_t k = 0; k < 2; ++k) {
            const Caption cap = scene_caption(f, k, split);
            ++cov.captions;
            const std::string missing = missing_fact(f, cap);
            EXPECT_EQ(missing, "") << cap.text << "\n  facts: " << facts_json(f);
            for (const std::string& id : cap.templates) cov.used[static_cast<int>(split)].insert(id);
          }
      }
    return cov;
  }();
  return kCoverage;
}

CaptionSplit split_of(const std::string& id) {
  for (const CaptionTemplate& t : caption_templates())
    if (t.id == id) return t.split;
  ADD_FAILURE() << "unknown template " << id;
  return CaptionSplit::train;
}

}  // namespace

TEST(SceneCaptions, MentionEveryFactTheyAreBuiltFrom) {
  EXPECT_GT(coverage().captions, 1000);
  // A few whole captions, for the log.
  for (const int c : {0, 3, 8, 10}) {
    const SceneFacts f = scene_facts(c, 7);
    std::printf("train:    %s\nheld-out: %s\n", scene_caption(f, 0, CaptionSplit::train).text.c_str(),
                scene_caption(f, 0, CaptionSplit::held_out).text.c_str());
  }
}

TEST(SceneCaptions, EveryTemplateIsReachable) {
  const Coverage& cov = coverage();
  for (const CaptionTemplate& t : caption_templates())
    EXPECT_TRUE(cov.used[static_cast<int>(t.split)].count(t.id))
        << t.id << " (\"" << t.pattern << "\", " << to_string(t.split) << ") is never used";
}

TEST(SceneCaptions, TrainAndHeldOutSplitsShareNoTemplate) {
  const Coverage& cov = coverage();
  for (const std::string& id : cov.used[static_cast<int>(CaptionSplit::train)])
    EXPECT_EQ(split_of(id), CaptionSplit::train) << id << " appears in a train caption";
  for (const std::string& id : cov.used[static_cast<int>(CaptionSplit::held_out)])
    EXPECT_EQ(split_of(id), CaptionSplit::held_out) << id << " appears in a held-out caption";
  // Every group has a phrasing in each split, and ids are unique.
  std::map<std::string, std::set<CaptionSplit>> groups;
  std::set<std::string> ids;
  for (const CaptionTemplate& t : caption_templates()) {
    EXPECT_TRUE(ids.insert(t.id).second) << t.id;
    groups[t.id.substr(0, t.id.rfind('.'))].insert(t.split);
  }
  for (const auto& [group, splits] : groups) EXPECT_EQ(splits.size(), 2u) << group;
  // Held-out captions never read like train ones.
  std::set<std::string> train_texts;
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
    for (uint64_t seed = 0; seed < 20; ++seed)
      for (uint64_t k = 0; k < 3; ++k)
        train_texts.insert(scene_caption(scene_facts(c, seed), k, CaptionSplit::train).text);
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
    for (uint64_t seed = 0; seed < 20; ++seed)
      EXPECT_FALSE(train_texts.count(scene_caption(scene_facts(c, seed), 0, CaptionSplit::held_out).text));
}

TEST(SceneCaptions, AreDeterministicAndVaryWithTheCaptionSeed) {
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c) {
    const SceneFacts f = scene_facts(c, 11);
    std::set<std::string> texts;
    for (uint64_t k = 0; k < 8; ++k) {
      const Caption a = scene_caption(f, k, CaptionSplit::train);
      const Caption b = scene_caption(scene_facts(c, 11), k, CaptionSplit::train);
      EXPECT_EQ(a.text, b.text);
      EXPECT_EQ(a.templates, b.templates);
      texts.insert(a.text);
    }
    EXPECT_GE(texts.size(), 4u) << scene_classes()[c].name << ": 8 caption seeds give too few wordings";
    // Different pictures of a class are told apart.
    EXPECT_NE(scene_caption(f, 0, CaptionSplit::train).text,
              scene_caption(scene_facts(c, 12), 0, CaptionSplit::train).text);
  }
}

TEST(SceneCaptions, ReadAsPlainEnglish) {
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
    for (uint64_t seed = 0; seed < 30; ++seed)
      for (const CaptionSplit split : {CaptionSplit::train, CaptionSplit::held_out}) {
        const std::string t = scene_caption(scene_facts(c, seed), seed, split).text;
        EXPECT_EQ(t.find('{'), std::string::npos) << t;
        EXPECT_EQ(t.find("  "), std::string::npos) << t;
        EXPECT_EQ(t.find(" ,"), std::string::npos) << t;
        for (const char* bad : {" a a", " a e", " a i", " a o", " a u", ", ,"})
          EXPECT_EQ(t.find(bad), std::string::npos) << t;
        EXPECT_FALSE(t.empty());
        EXPECT_NE(t.back(), ',') << t;
        EXPECT_NE(t.back(), ' ') << t;
        // Every phrase stands apart from the subject.
        for (const char* glued : {"lifea", "seaa", "skya", "fielda"}) EXPECT_EQ(t.find(glued), std::string::npos) << t;
      }
}

TEST(SceneCaptions, SplitNamesAndNumberWords) {
  EXPECT_EQ(parse_caption_split("train"), CaptionSplit::train);
  EXPECT_EQ(parse_caption_split("held-out"), CaptionSplit::held_out);
  EXPECT_STREQ(to_string(CaptionSplit::held_out), "held-out");
  EXPECT_THROW(parse_caption_split("test"), InvalidArgumentError);
  EXPECT_EQ(number_word(3), "three");
  EXPECT_EQ(number_word(12), "twelve");
  EXPECT_EQ(number_word(13), "13");
  SceneFacts bad;
  EXPECT_THROW(scene_caption(bad, 0, CaptionSplit::train), InvalidArgumentError);
}
