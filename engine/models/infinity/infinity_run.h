#pragma once
// An Infinity run on the next-scale stream (engine/generation/scale/
// scale_stream.h: one unit per scale): the request's prompt, its negative prompt
// (or the learned unconditional text), CFG at every scale, tau as the
// temperature, top-k / top-p over the bits, the image size as an official
// template and pixel budget, the policy on the self-attention cache.
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::infinity {

struct InfinityModel;
struct InfinityCalibrations;

// `calibrations`: what the loaded model keeps between runs (infinity_calibration.h).
GenerationResult run_infinity_generation(const InfinityModel& model, InfinityCalibrations& calibrations,
                                         const GenerationRequest& request, const RunContext& context);

}  // namespace kvs::infinity
