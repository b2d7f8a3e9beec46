#pragma once
// Whether generated images show what their prompts ask for, in the attributes
// the procedural world's pixel measures can check (engine/world/scene_measures.h):
// the time of day, the sun's or moon's side and height, named colours and a
// clear or cloudy sky, as
// read from each prompt by engine/world/prompt_attributes.h. bench reports the
// accuracies per policy beside class accuracy. Torch-free.
//
// Choices:
// - One case per attribute asked for: an image whose prompt asks for "red and
//   blue tones at night" counts one time case and two colour cases. An accuracy
//   is the fraction of its cases the measure accepts; `all` pools every case.
// - The measures are calibrated on world pictures; on the world's own pictures
//   judged against their held-out captions they accept every time of day but not
//   every side, height or colour (tests/engine/test_prompt_attributes.cpp prints
//   the figures, docs/benchmarks.md quotes them), so the accuracies compare
//   policies with the full cache rather than grade a model absolutely.
#include <cstdint>
#include <vector>

#include "engine/image/rgb_image.h"
#include "engine/world/prompt_attributes.h"

namespace kvs {

struct AttributeCount {
  int64_t judged = 0;       // cases asked for
  int64_t shown = 0;        // cases the measure accepts
  double accuracy() const;  // shown / judged; NaN when nothing was asked
};

struct AttributeScore {
  AttributeCount time, light_side, light_height, colour, clouds;
  AttributeCount all() const;  // every case pooled
};

// images[i] was generated for a prompt that asks for asked[i]. Throws
// InvalidArgumentError when the counts differ.
AttributeScore judge_attributes(const std::vector<RgbImage>& images, const std::vector<world::PromptAttributes>& asked);

}  // namespace kvs
