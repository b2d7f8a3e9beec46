#pragma once
// The masked family's generation session (MAR): one unit per decoding step.
// Emits StartedEvent (unit "step"), then per step a TokenProgressEvent (tokens
// known so far) and a UnitDoneEvent with the positions predicted at the step
// (image 0, in generation order), which positions were recomputed, the step's
// counted FLOPs and, when asked for, a preview decoded from the tokens known so
// far (unknown tokens are zero latents, as upstream initialises them). MAR has no
// KV cache: the memory fields stay 0 and no retained masks are produced.
// Policies: "full" (full recomputation every step) or "lazymar:..." (LazyMAR's
// feature caches, engine/models/mar/lazymar_policy.h); the result carries the
// FLOPs per image.
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::mar {

struct MarModel;

GenerationResult run_masked_generation(const MarModel& model, const GenerationRequest& request,
                                       const RunContext& context);

}  // namespace kvs::mar
