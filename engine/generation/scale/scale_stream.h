#pragma once
// A next-scale family's run in the window, the CLI and the benchmark: one unit
// per scale. Emits StartedEvent (unit "scale"), a TokenProgressEvent and a
// UnitDoneEvent per scale (KV memory, retained masks over the flattened
// multi-scale positions, the attention of the scale's queries, and a preview
// decoded from the current f_hat: after any scale the whole image is there,
// coarse), PolicyChangedEvent at scale boundaries; returns the images and the
// run's memory. The family hands in its network and what it knows of the run
// (ScaleRun); the events are the same for every next-scale family.
#include <ATen/core/Tensor.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/policy_spec.h"
#include "engine/generation/scale/scale_loop.h"
#include "engine/image/rgb_image.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::scale {

// A next-scale model runs with `full` or a policy written for scale units
// (cache_policy.h). A raster policy may already refuse the scale context while
// it is built (its budget rules count token lines); the message says why either way.
std::unique_ptr<CachePolicy> make_scale_policy(const PolicySpec& spec, const PolicyContext& context);

struct ScaleRun {
  std::string model_name;
  std::string family;  // StartedEvent::family ("var")
  ScaleShape shape;
  int64_t images = 1;                       // B
  int64_t grid_height = 0, grid_width = 0;  // the last scale's token grid
  // Each scale's (height, width) in tokens, one per scale of `shape` (StartedEvent reports them).
  std::vector<std::array<int64_t, 2>> scale_grids;
  // Text families with a cross-attention: image 0's text tokens as the window
  // labels them (StartedEvent::condition_labels); empty for class-conditional ones.
  std::vector<std::string> condition_labels;
  // Where the request's policy is built (and a changed one), with the
  // calibrations the family's policies may ask for.
  PolicyContext policy_context;
  // f_hat [B, C, H, W] -> the pictures.
  std::function<std::vector<RgbImage>(const at::Tensor& f_hat)> decode;
};

GenerationResult stream_scales(ScaleNetwork& network, const ScaleRun& run, const GenerationRequest& request,
                               const RunContext& context);

}  // namespace kvs::scale
