#pragma once
// A masked family's run in the window, the CLI and the benchmark: one unit per
// step. Emits StartedEvent (unit "step"), a TokenProgressEvent and a
// UnitDoneEvent per step (the positions of image 0 predicted at it, process
// memory, a preview of the tokens known so far, and what the family adds: its
// attention map, FLOPs, recomputed tokens) and, for a policy change asked for
// mid-run, the family's refusal (a masked model's feature caches span the
// run); returns the images. The family hands in its network and what it
// knows of the run (MaskedRun).
#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/generation/masked/masked_loop.h"
#include "engine/image/rgb_image.h"
#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::masked {

struct MaskedRun {
  std::string model_name;
  std::string family;  // StartedEvent::family ("mar")
  MaskedShape shape;
  int64_t grid_height = 0, grid_width = 0;  // the token grid
  // tokens [B, seq_len, C] (zeros where unknown) -> the pictures.
  std::function<std::vector<RgbImage>(const at::Tensor& tokens)> decode;
  // The family's part of a step's unit event, after the predicted positions are set.
  std::function<void(UnitDoneEvent& unit, const MaskedStep& step)> describe_unit;
  // A policy change asked for mid-run (not the active spec): throws kvs::Error
  // saying why it cannot apply now.
  std::function<void(const std::string& spec)> refuse_change;
};

// `generated`, when given, receives the loop's own result (orders, schedule).
GenerationResult stream_masked(MaskedNetwork& network, const MaskedRun& run, const GenerationRequest& request,
                               const RunContext& context, MaskedResult* generated = nullptr);

}  // namespace kvs::masked
