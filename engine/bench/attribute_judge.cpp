#include "engine/bench/attribute_judge.h"

#include <limits>
#include <string>

#include "engine/core/errors.h"
#include "engine/world/scene_measures.h"

namespace kvs {

namespace {

void add(AttributeCount& count, bool shown) {
  ++count.judged;
  count.shown += shown ? 1 : 0;
}

}  // namespace

double AttributeCount::accuracy() const {
  return judged > 0 ? static_cast<double>(shown) / static_cast<double>(judged)
                    : std::numeric_limits<double>::quiet_NaN();
}

AttributeCount AttributeScore::all() const {
  AttributeCount pooled;
  for (const AttributeCount* c : {&time, &light_side, &light_height, &colour, &clouds}) {
    pooled.judged += c->judged;
    pooled.shown += c->shown;
  }
  return pooled;
}

AttributeScore judge_attributes(const std::vector<RgbImage>& images,
                                const std::vector<world::PromptAttributes>& asked) {
  if (images.size() != asked.size())
    throw InvalidArgumentError("attribute judge: " + std::to_string(images.size()) + " images for " +
                               std::to_string(asked.size()) + " prompts");
  AttributeScore s;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const world::PromptAttributes& a = asked[i];
    if (a.time) add(s.time, world::matches_time_of_day(images[i], *a.time));
    if (a.light_side) add(s.light_side, world::matches_light_side(images[i], *a.light_side));
    if (a.light_height) add(s.light_height, world::matches_light_height(images[i], *a.light_height));
    for (const world::ColourName c : a.colours) add(s.colour, world::matches_colour(images[i], c));
    if (a.clouds) add(s.clouds, world::matches_cloud_cover(images[i], *a.clouds));
  }
  return s;
}

}  // namespace kvs
