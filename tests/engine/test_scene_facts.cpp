// The facts the world's painters record while drawing (engine/world/scene_facts.h):
// the same at every size and without pixels, in range for every class, and varied
// across seeds (so captions built from them tell pictures apart).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "engine/core/errors.h"
#include "engine/world/scene_facts.h"
#include "engine/world/scene_world.h"

using namespace kvs;
using namespace kvs::world;

namespace {

int class_id(const std::string& name) {
  const int id = scene_class_id(name);
  if (id < 0) ADD_FAILURE() << "no class " << name;
  return std::max(id, 0);
}

}  // namespace

TEST(SceneFacts, AreTheSameAtEverySizeAndWithoutPixels) {
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
    for (const uint64_t seed : {uint64_t{3}, kHeldOutSeedBase + 5}) {
      const RenderedScene small = render_scene_with_facts(c, seed, 32);
      const RenderedScene big = render_scene_with_facts(c, seed, 96);
      const std::string alone = facts_json(scene_facts(c, seed));
      EXPECT_EQ(facts_json(small.facts), alone) << scene_classes()[c].name;
      EXPECT_EQ(facts_json(big.facts), alone) << scene_classes()[c].name;
      EXPECT_EQ(small.image.pixels, render_scene(c, seed, 32).pixels) << scene_classes()[c].name;
      EXPECT_EQ(small.facts.class_id, c);
      EXPECT_EQ(small.facts.seed, seed);
    }
  EXPECT_THROW(scene_facts(-1, 0), InvalidArgumentError);
  EXPECT_THROW(scene_facts(static_cast<int>(scene_classes().size()), 0), InvalidArgumentError);
}

TEST(SceneFacts, EveryClassReportsWhatItDraws) {
  std::map<std::string, std::set<std::string>> seen;  // class → values seen
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c) {
    const std::string& name = scene_classes()[c].name;
    for (uint64_t seed = 0; seed < 120; ++seed) {
      const SceneFacts f = scene_facts(c, seed);
      for (std::size_t i = 0; i < f.colours.size(); ++i)
        for (std::size_t j = i + 1; j < f.colours.size(); ++j) EXPECT_NE(f.colours[i], f.colours[j]) << name;
      if (f.light.kind != LightKind::none) {
        EXPECT_EQ(f.light.side, side_of(f.light.x)) << name;
        if (f.light.disc) {
          EXPECT_EQ(f.light.height, height_of(f.light.y)) << name;
        }
        seen[name].insert(std::string("side:") + to_string(f.light.side));
      }
      seen[name].insert(std::string("time:") + to_string(f.time));
      if (f.clouds >= 0) seen[name].insert("clouds:" + std::to_string(f.clouds));
      for (const SceneObject& o : f.objects) {
        EXPECT_GE(o.count, 1) << name;
        EXPECT_FALSE(o.noun.empty());
        seen[name].insert("object:" + o.noun);
      }
      for (const std::string& feature : f.features) seen[name].insert("feature:" + feature);
      if (!f.pattern.empty()) seen[name].insert("pattern:" + f.pattern);
    }
  }
  // What a person would say about each class, and that it varies with the seed.
  auto has = [&](const std::string& cls, const std::string& value) {
    EXPECT_TRUE(seen[cls].count(value)) << cls << " never reports " << value;
  };
  for (const char* side : {"side:left", "side:centre", "side:right"}) {
    has("sunset_sea", side);
    has("night_sky", side);
    has("desert", side);
    has("underwater", side);
  }
  has("sunset_sea", "time:sunset");
  has("sunset_sea", "object:island");
  has("sunset_sea", "clouds:0");
  has("mountains", "time:dawn");
  has("mountains", "time:day");
  has("lake", "time:evening");
  has("lake", "feature:snowy_peaks");
  has("night_sky", "time:night");
  has("night_sky", "feature:milky_way");
  has("forest", "time:evening");
  has("city_dusk", "time:dusk");
  has("hills", "object:tree");
  has("hills", "feature:path");
  has("underwater", "object:fish");
  has("flower_fields", "object:windmill");
  for (const char* p : {"checkerboard", "diamonds", "stripes", "triangles", "hexagons", "rings", "squares"})
    has("tiling", std::string("pattern:") + p);
  for (const char* o : {"object:vase", "object:fruit", "object:striped ball"}) has("still_life", o);
  EXPECT_EQ(scene_facts(class_id("underwater"), 1).water, Water::underwater);
  EXPECT_EQ(scene_facts(class_id("lake"), 1).water, Water::lake);
  EXPECT_EQ(scene_facts(class_id("desert"), 1).water, Water::none);
}

TEST(SceneFacts, StillLifeObjectsAreCountedAndPlaced) {
  const int c = class_id("still_life");
  std::set<std::size_t> counts;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const SceneFacts f = scene_facts(c, seed);
    counts.insert(f.objects.size());
    ASSERT_GE(f.objects.size(), 1u);
    ASSERT_LE(f.objects.size(), 3u);
    for (const SceneObject& o : f.objects) {
      EXPECT_TRUE(o.placed);
      EXPECT_TRUE(o.coloured);
      EXPECT_EQ(o.count, 1);
    }
  }
  EXPECT_EQ(counts.size(), 3u) << "1, 2 and 3 objects all occur";
}

TEST(SceneFacts, MirroredSwapsEverySideAndNothingElse) {
  int lights = 0, placed = 0;
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
    for (uint64_t seed = 0; seed < 30; ++seed) {
      const SceneFacts f = scene_facts(c, seed);
      const SceneFacts m = mirrored(f);
      EXPECT_FLOAT_EQ(m.light.x, 1.f - f.light.x);
      EXPECT_EQ(m.light.y, f.light.y);
      if (f.light.kind != LightKind::none && f.light.disc) {
        EXPECT_EQ(m.light.side, side_of(m.light.x)) << "class " << c << " seed " << seed;
        ++lights;
      }
      ASSERT_EQ(m.objects.size(), f.objects.size());
      for (size_t i = 0; i < f.objects.size(); ++i) {
        const Side s = f.objects[i].side, ms = m.objects[i].side;
        EXPECT_EQ(ms, s == Side::left ? Side::right : (s == Side::right ? Side::left : Side::centre));
        placed += f.objects[i].placed;
      }
      // Twice is the original, and what has no direction is untouched.
      EXPECT_EQ(facts_json(mirrored(m)), facts_json(f));
      SceneFacts unsided = m;
      unsided.light = f.light;
      unsided.objects = f.objects;
      EXPECT_EQ(facts_json(unsided), facts_json(f));
    }
  EXPECT_GT(lights, 50);
  EXPECT_GT(placed, 10);
}

TEST(SceneFacts, NamesColoursInPlainEnglish) {
  EXPECT_EQ(colour_name(0.9f, 0.1f, 0.1f), ColourName::red);
  EXPECT_EQ(colour_name(0.95f, 0.55f, 0.15f), ColourName::orange);
  EXPECT_EQ(colour_name(0.95f, 0.85f, 0.1f), ColourName::yellow);
  EXPECT_EQ(colour_name(0.2f, 0.7f, 0.2f), ColourName::green);
  EXPECT_EQ(colour_name(0.1f, 0.7f, 0.7f), ColourName::teal);
  EXPECT_EQ(colour_name(0.2f, 0.3f, 0.9f), ColourName::blue);
  EXPECT_EQ(colour_name(0.5f, 0.2f, 0.7f), ColourName::purple);
  EXPECT_EQ(colour_name(0.94f, 0.44f, 0.64f), ColourName::pink);
  EXPECT_EQ(colour_name(0.45f, 0.3f, 0.15f), ColourName::brown);
  EXPECT_EQ(colour_name(0.97f, 0.96f, 0.95f), ColourName::white);
  EXPECT_EQ(colour_name(0.5f, 0.5f, 0.52f), ColourName::grey);
  EXPECT_EQ(colour_name(0.05f, 0.05f, 0.1f), ColourName::black);
  for (int i = 0; i <= static_cast<int>(ColourName::black); ++i)
    EXPECT_EQ(parse_colour_name(to_string(static_cast<ColourName>(i))), static_cast<ColourName>(i));
  EXPECT_THROW(parse_colour_name("mauve"), InvalidArgumentError);
}

TEST(SceneFacts, JsonNamesEveryFact) {
  const std::string j = facts_json(scene_facts(class_id("night_sky"), 4));
  for (const char* key : {"\"class_id\": ", "\"time\": \"night\"", "\"light\": {\"kind\": \"moon\"",
                          "\"crescent\": ", "\"colours\": [", "\"clouds\": -1", "\"objects\": [", "\"features\": ["})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
}
