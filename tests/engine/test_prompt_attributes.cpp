// Reading what a prompt asks for (engine/world/prompt_attributes.h): from every
// caption of the world's pictures (all classes, training and held-out seeds, both
// caption splits) it reads back exactly the facts the caption mentions (time of
// day, the sun's or moon's side and height, colours) and claims nothing it does
// not mention; hand-written plain-English prompts read as a person would, and
// ambiguous ones claim nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/world/prompt_attributes.h"
#include "engine/world/scene_captions.h"
#include "engine/world/scene_measures.h"
#include "engine/world/scene_world.h"

using namespace kvs;
using namespace kvs::world;

namespace {

constexpr uint64_t kSeedsPerClass = 120;  // half below kHeldOutSeedBase, half above
constexpr uint64_t kCaptionsPerPicture = 3;

uint64_t seed_at(uint64_t i) { return i % 2 ? kHeldOutSeedBase + i : i; }

bool mentions(const Caption& caption, const std::string& fact) {
  for (const std::string& f : caption.facts)
    if (f == fact) return true;
  return false;
}

// The colours a caption names: the picture's colours and its coloured objects'.
std::set<ColourName> named_colours(const SceneFacts& f, const Caption& caption) {
  std::set<ColourName> out;
  if (mentions(caption, "colours")) out.insert(f.colours.begin(), f.colours.end());
  for (const SceneObject& o : f.objects)
    if (o.coloured && mentions(caption, "object:" + o.noun)) out.insert(o.colour);
  return out;
}

template <typename T>
std::string text_of(const std::optional<T>& v) {
  return v.has_value() ? std::string(to_string(v.value())) : std::string("-");
}

std::string text_of(const std::set<ColourName>& colours) {
  std::string s;
  for (const ColourName c : colours) {
    if (!s.empty()) s += ',';
    s += to_string(c);
  }
  return s.empty() ? "-" : s;
}

std::set<ColourName> as_set(const std::vector<ColourName>& colours) { return {colours.begin(), colours.end()}; }

}  // namespace

TEST(PromptAttributes, ReadBackEveryCaptionsFacts) {
  int captions = 0, times = 0, sides = 0, heights = 0, colours = 0, clouds = 0;
  int wrong = 0;
  for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
    for (uint64_t i = 0; i < kSeedsPerClass; ++i) {
      const SceneFacts f = scene_facts(c, seed_at(i));
      for (const CaptionSplit split : {CaptionSplit::train, CaptionSplit::held_out})
        for (uint64_t k = 0; k < kCaptionsPerPicture; ++k) {
          const Caption cap = scene_caption(f, k, split);
          const PromptAttributes a = read_prompt_attributes(cap.text);
          ++captions;
          std::optional<TimeOfDay> time;
          std::optional<Side> side;
          std::optional<Height> height;
          std::optional<CloudCover> cover;
          if (mentions(cap, "time")) time = f.time;
          if (mentions(cap, "clouds")) cover = cloud_cover_of(f);
          if (mentions(cap, "light.side")) side = f.light.side;
          if (mentions(cap, "light.height")) height = f.light.height;
          const std::set<ColourName> named = named_colours(f, cap);
          times += time.has_value();
          sides += side.has_value();
          heights += height.has_value();
          colours += static_cast<int>(named.size());
          clouds += cover.has_value();
          const bool right = a.time == time && a.light_side == side && a.light_height == height &&
                             as_set(a.colours) == named && a.colours.size() == named.size() && a.clouds == cover;
          if (!right && ++wrong <= 20)
            ADD_FAILURE() << to_string(split) << " caption: " << cap.text << "\n  read time " << text_of(a.time)
                          << " side " << text_of(a.light_side) << " height " << text_of(a.light_height) << " colours "
                          << text_of(as_set(a.colours)) << "\n  facts time " << text_of(time) << " side "
                          << text_of(side) << " height " << text_of(height) << " colours " << text_of(named)
                          << "\n  clouds read " << (a.clouds ? to_string(*a.clouds) : "-") << ", facts "
                          << (cover ? to_string(*cover) : "-");
        }
    }
  std::printf("%d captions: %d times, %d sides, %d heights, %d colours, %d cloud covers read back; %d wrong\n",
              captions, times, sides, heights, colours, clouds, wrong);
  EXPECT_EQ(wrong, 0);
  // Every attribute was there to read, many times over.
  EXPECT_GT(times, 2000);
  EXPECT_GT(sides, 2000);
  EXPECT_GT(heights, 1000);
  EXPECT_GT(colours, 2000);
  EXPECT_GT(clouds, 1000);
}

TEST(PromptAttributes, ReadPlainEnglish) {
  const PromptAttributes forest = read_prompt_attributes("a dark pine forest at night");
  EXPECT_EQ(forest.time, TimeOfDay::night);
  EXPECT_FALSE(forest.light_side || forest.light_height);
  EXPECT_TRUE(forest.colours.empty());

  const PromptAttributes sun = read_prompt_attributes("The SUN low on the LEFT, a Red boat and a blue-grey sea");
  EXPECT_EQ(sun.light_side, Side::left);
  EXPECT_EQ(sun.light_height, Height::low);
  EXPECT_EQ(sun.colours, (std::vector<ColourName>{ColourName::red, ColourName::blue, ColourName::grey}));
  EXPECT_FALSE(sun.time);

  const PromptAttributes moon = read_prompt_attributes("a crescent moon hanging high in the sky to the right");
  EXPECT_EQ(moon.light_side, Side::right);
  EXPECT_EQ(moon.light_height, Height::high);
  EXPECT_EQ(read_prompt_attributes("a low sun over the dunes").light_height, Height::low);
  EXPECT_EQ(read_prompt_attributes("the moon near the horizon").light_height, Height::low);
  EXPECT_EQ(read_prompt_attributes("a sun on the right side").light_side, Side::right);
  EXPECT_EQ(read_prompt_attributes("the moon in the center of the sky").light_side, Side::centre);
  EXPECT_EQ(read_prompt_attributes("sunlight from the left on snowy peaks").light_side, Side::left);

  const PromptAttributes times[] = {
      read_prompt_attributes("a city in the twilight"),     read_prompt_attributes("a lake at sunrise"),
      read_prompt_attributes("hills in the afternoon"),     read_prompt_attributes("the sea after sunset"),
      read_prompt_attributes("golden hour over the hills"), read_prompt_attributes("a desert at sundown"),
  };
  EXPECT_EQ(times[0].time, TimeOfDay::dusk);
  EXPECT_EQ(times[1].time, TimeOfDay::dawn);
  EXPECT_EQ(times[2].time, TimeOfDay::day);
  EXPECT_EQ(times[3].time, TimeOfDay::dusk);
  EXPECT_EQ(times[4].time, TimeOfDay::evening);
  EXPECT_EQ(times[5].time, TimeOfDay::sunset);
  EXPECT_EQ(read_prompt_attributes("a gray cat, violet flowers").colours,
            (std::vector<ColourName>{ColourName::grey, ColourName::purple}));
  EXPECT_TRUE(read_prompt_attributes("a bowl of ramen, studio lighting").empty());
  EXPECT_EQ(read_prompt_attributes("a lake under a clear blue sky").clouds, CloudCover::clear);
  EXPECT_EQ(read_prompt_attributes("hills without a cloud").clouds, CloudCover::clear);
  EXPECT_EQ(read_prompt_attributes("a cloudless summer meadow").clouds, CloudCover::clear);
  EXPECT_EQ(read_prompt_attributes("an overcast lake").clouds, CloudCover::cloudy);
  EXPECT_EQ(read_prompt_attributes("mountains with 3 clouds").clouds, CloudCover::cloudy);
  EXPECT_EQ(read_prompt_attributes("a cloudy day over the fields").clouds, CloudCover::cloudy);
  EXPECT_FALSE(read_prompt_attributes("a lake at dawn").clouds);
}

TEST(PromptAttributes, AmbiguousPromptsClaimNothing) {
  // A side or height that belongs to something else.
  const PromptAttributes island = read_prompt_attributes("an island on the left of a calm lake at dawn");
  EXPECT_EQ(island.time, TimeOfDay::dawn);
  EXPECT_FALSE(island.light_side);
  const PromptAttributes both = read_prompt_attributes("a red vase on the right, the sun high on the left");
  EXPECT_EQ(both.light_side, Side::left);
  EXPECT_EQ(both.light_height, Height::high);
  EXPECT_EQ(both.colours, std::vector<ColourName>{ColourName::red});
  const PromptAttributes hills = read_prompt_attributes("a lake at sunset, the sun on the left, low hills behind");
  EXPECT_EQ(hills.light_side, Side::left);
  EXPECT_FALSE(hills.light_height);
  EXPECT_FALSE(read_prompt_attributes("high mountains and a low wall on the left").light_side);
  EXPECT_FALSE(read_prompt_attributes("high mountains and a low wall on the left").light_height);
  // Two values of one attribute.
  EXPECT_FALSE(read_prompt_attributes("a meadow from dawn to dusk").time);
  EXPECT_FALSE(read_prompt_attributes("a sunset over the sea at dusk").time);
  EXPECT_FALSE(read_prompt_attributes("the sun on the left and the moon on the right").light_side);
  // Colour words that are not asked for.
  EXPECT_TRUE(read_prompt_attributes("a lake in the pink light of dawn").colours.empty());
  EXPECT_TRUE(read_prompt_attributes("apples on a brown wooden tabletop").colours.empty());
  EXPECT_EQ(read_prompt_attributes("a green field, no red, not blue, without yellow").colours,
            std::vector<ColourName>{ColourName::green});
  EXPECT_TRUE(read_prompt_attributes("").empty());
  // A clear sky and clouds in one prompt.
  EXPECT_FALSE(read_prompt_attributes("a clear sky on the left, two clouds on the right").clouds);
  EXPECT_FALSE(read_prompt_attributes("no clouds, just a cloud").clouds);
}

TEST(PromptAttributes, TheWorldsOwnPicturesShowWhatTheirCaptionsAsk) {
  // What a perfect model would score: each world picture judged by the pixel
  // measures against what its held-out caption asks (bench's attribute accuracy
  // on the pictures themselves, at 32 px). Printed for docs/benchmarks.md.
  // Without the class, captions also ask where the measures do not apply (light
  // without a disc, the city's small moon, the desert sun's height, objects'
  // colours smaller than a tenth of the picture), so only the time of day is near
  // 100 %; with the class (a bench prompt line CLASS<TAB>PROMPT), only what the
  // measures can judge on that class is asked, and every attribute is >= 95 % right.
  for (const bool with_class : {false, true}) {
    const double floors[5] = {0.95, with_class ? 0.95 : 0.7, with_class ? 0.95 : 0.65, with_class ? 0.95 : 0.7,
                              with_class ? 0.95 : 0.7};
    int asked[5] = {}, right[5] = {};
    for (int c = 0; c < static_cast<int>(scene_classes().size()); ++c)
      for (uint64_t i = 0; i < 30; ++i) {
        const RenderedScene p = render_scene_with_facts(c, kHeldOutSeedBase + i, 32);
        const PromptAttributes a = measurable_attributes(read_prompt_attributes(
                                                             scene_caption(p.facts, 0, CaptionSplit::held_out).text),
                                                         with_class ? std::optional<int>(c) : std::nullopt);
        if (a.time) asked[0] += 1, right[0] += matches_time_of_day(p.image, *a.time);
        if (a.light_side) asked[1] += 1, right[1] += matches_light_side(p.image, *a.light_side);
        if (a.light_height) asked[2] += 1, right[2] += matches_light_height(p.image, *a.light_height);
        for (const ColourName colour : a.colours) asked[3] += 1, right[3] += matches_colour(p.image, colour);
        if (a.clouds) asked[4] += 1, right[4] += matches_cloud_cover(p.image, *a.clouds);
      }
    const char* names[5] = {"time", "light side", "light height", "colour", "clouds"};
    for (int k = 0; k < 5; ++k) {
      std::printf("world pictures %s, %s: %d/%d = %.3f\n", with_class ? "with class" : "without class", names[k],
                  right[k], asked[k], asked[k] ? static_cast<double>(right[k]) / asked[k] : 0.0);
      EXPECT_GT(asked[k], with_class ? 20 : 50) << names[k];
      EXPECT_GE(static_cast<double>(right[k]) / asked[k], floors[k]) << names[k] << (with_class ? " with class" : "");
    }
  }
}
