#pragma once
// What an English prompt asks a picture to show, in the terms the pixel measures
// (scene_measures.h) can check: the time of day, the side and height of the sun
// or moon, named colours, and whether the sky is clear or has clouds. bench reads each prompt with it and judges the
// generated images against what was asked (engine/bench/attribute_judge.h).
//
// It reads every phrasing of the caption grammar (scene_captions.h), taken from
// the grammar's own templates and slot words, and plain English besides ("at
// night", "the sun low on the left", "a red boat"). What it cannot tie to one
// value it leaves out rather than guess:
// - a side or height counts only inside a phrase about the sun or moon (or its
//   light): in "an island on the left" the side belongs to the island;
// - two different values of one attribute ("from dawn to dusk", "the sun on the
//   left and the moon on the right") claim nothing for it;
// - a colour word inside one of the grammar's fixed phrasings ("in the pink light
//   of dawn", "a brown wooden tabletop") belongs to that phrase, and one after
//   "no", "not" or "without" is not asked for;
// - clouds are asked for by any cloud word ("a lone cloud", "three clouds",
//   "cloudy", "overcast") and a clear sky by the grammar's and plain phrasings
//   ("a clear sky", "no clouds", "cloudless", "without a cloud"); both in one
//   prompt claim nothing.
// tests/engine/test_prompt_attributes.cpp reads back the facts from captions of
// both splits. Torch-free.
#include <optional>
#include <string>
#include <vector>

#include "engine/world/scene_facts.h"
#include "engine/world/scene_measures.h"

namespace kvs::world {

struct PromptAttributes {
  std::optional<TimeOfDay> time;
  std::optional<Side> light_side;      // the sun's or moon's (or its light's) side
  std::optional<Height> light_height;  // the sun's or moon's disc
  std::vector<ColourName> colours;     // in the order first named, no repeats
  std::optional<CloudCover> clouds;    // a clear sky or clouds

  bool empty() const { return !time && !light_side && !light_height && colours.empty() && !clouds; }
};

PromptAttributes read_prompt_attributes(const std::string& prompt);

// What of `asked` the pixel measures can judge on a picture of `class_id`: the
// side and height of the light, the colours and the clouds only on the classes
// each measure is trusted on (scene_measures.h), and of a tiling's colours the first hue named
// (the one that covers a third of it). Without a class, everything asked.
PromptAttributes measurable_attributes(const PromptAttributes& asked, std::optional<int> class_id);

}  // namespace kvs::world
