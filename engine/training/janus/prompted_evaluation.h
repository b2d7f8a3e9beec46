#pragma once
// The text-to-image half of `kvstudio-train evaluate`: images generated from the
// captions of held-out pictures (seeds never trained on), alternately in the
// train and the held-out wording of the caption grammar, one image per caption,
// and how well they follow the words:
//   - the class a caption names is judged by the caller (evaluation classifier),
//     overall and per wording;
//   - attributes are judged with the world's pixel measures (scene_measures.h)
//     against the facts of the captioned picture, where the caption mentions the
//     fact and inside the domain each measure was validated on (≥ 95 % right on
//     world pictures, docs/training.md): time of day on every class with a time;
//     the sun's or moon's side on pictures with a disc, but for the city's small
//     moon; its height likewise, and not for the desert sun; a tiling's first named
//     hue colour (it covers a third of the tiling or more).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/image/rgb_image.h"
#include "engine/session/generation_request.h"
#include "engine/world/scene_captions.h"
#include "engine/world/scene_facts.h"

namespace kvs::training {

struct PromptedImages {
  std::vector<RgbImage> images;
  std::vector<int64_t> labels;  // the class each caption names
  std::vector<world::CaptionSplit> wording;
  std::vector<world::SceneFacts> facts;
  std::vector<world::Caption> captions;
};

// `per_class` held-out pictures of each of `classes` classes, interleaved by class
// (image i: class i % classes), each caption run as one request (`base` with its
// prompt set, one image, seed base.seed + i). `progress(done, total)` after each.
PromptedImages generate_from_held_out_captions(const GenerationRequest& base, int64_t per_class, int64_t classes,
                                               const std::function<void(int64_t, int64_t)>& progress = {});

// {"time_of_day": {"accuracy", "judged"}, "light_side": …, "light_height": …,
//  "colour": …, "clouds": …}; accuracy null where nothing was judged.
nlohmann::json judge_prompt_attributes(const PromptedImages& generated);

}  // namespace kvs::training
