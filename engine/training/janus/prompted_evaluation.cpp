#include "engine/training/janus/prompted_evaluation.h"

#include <algorithm>

#include "engine/models/generation_session.h"
#include "engine/training/janus/caption_data.h"
#include "engine/training/world_dataset.h"
#include "engine/world/scene_measures.h"
#include "engine/world/scene_world.h"

namespace kvs::training {
namespace {

bool mentions(const world::Caption& c, const std::string& fact) {
  return std::find(c.facts.begin(), c.facts.end(), fact) != c.facts.end();
}

struct Tally {
  int64_t hits = 0, judged = 0;
  void add(bool hit) {
    ++judged;
    hits += hit ? 1 : 0;
  }
  nlohmann::json to_json() const {
    nlohmann::json j = {{"judged", judged}, {"matched", hits}};
    j["accuracy"] = judged ? nlohmann::json(static_cast<double>(hits) / static_cast<double>(judged)) : nullptr;
    return j;
  }
};

}  // namespace

PromptedImages generate_from_held_out_captions(const GenerationRequest& base, int64_t per_class, int64_t classes,
                                               const std::function<void(int64_t, int64_t)>& progress) {
  PromptedImages out;
  const std::vector<WorldItem> items = world_items(WorldSplit::HeldOut, per_class, classes);
  GenerationSession session;
  const int64_t total = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < total; ++i) {
    const WorldItem& item = items[static_cast<size_t>(i)];
    // Alternate the wording per round over the classes, so every class gets both.
    const world::CaptionSplit wording = (i / classes) % 2 == 0 ? world::CaptionSplit::train
                                                               : world::CaptionSplit::held_out;
    world::SceneFacts facts = world::scene_facts(static_cast<int>(item.class_id), item.seed);
    world::Caption caption = world::scene_caption(facts, caption_seed(item.seed, 0), wording);
    GenerationRequest request = base;
    request.class_ids.clear();
    request.prompt = caption.text;
    request.images = 1;
    request.seed = base.seed + static_cast<uint64_t>(i);
    GenerationResult r = session.run(request);
    out.images.push_back(std::move(r.images.at(0)));
    out.labels.push_back(item.class_id);
    out.wording.push_back(wording);
    out.facts.push_back(std::move(facts));
    out.captions.push_back(std::move(caption));
    if (progress) progress(i + 1, total);
  }
  return out;
}

nlohmann::json judge_prompt_attributes(const PromptedImages& g) {
  Tally time, side, height, colour, clouds;
  for (size_t i = 0; i < g.images.size(); ++i) {
    const world::SceneFacts& f = g.facts[i];
    const world::Caption& c = g.captions[i];
    const RgbImage& img = g.images[i];
    if (mentions(c, "time") && f.time != world::TimeOfDay::unspecified)
      time.add(world::matches_time_of_day(img, f.time));
    const bool disc = f.light.kind != world::LightKind::none && f.light.disc;
    if (disc && world::light_side_measurable(f.class_id) && mentions(c, "light.side"))
      side.add(world::matches_light_side(img, f.light.side));
    if (disc && world::light_height_measurable(f.class_id) && mentions(c, "light.height"))
      height.add(world::matches_light_height(img, f.light.height));
    if (world::colour_measurable(f.class_id) && mentions(c, "colours")) {
      // The tiling's first hue colour, which covers a third of it or more.
      const auto hue = std::find_if(f.colours.begin(), f.colours.end(),
                                    [](world::ColourName n) { return n <= world::ColourName::pink; });
      if (hue != f.colours.end()) colour.add(world::matches_colour(img, *hue));
    }
    if (const auto cover = world::cloud_cover_of(f);
        cover && world::clouds_measurable(f.class_id) && mentions(c, "clouds"))
      clouds.add(world::matches_cloud_cover(img, *cover));
  }
  return {{"time_of_day", time.to_json()},
          {"light_side", side.to_json()},
          {"light_height", height.to_json()},
          {"colour", colour.to_json()},
          {"clouds", clouds.to_json()}};
}

}  // namespace kvs::training
