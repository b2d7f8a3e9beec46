#pragma once
// A MAR run on the masked floor (engine/generation/masked/masked_stream.h: one
// unit per decoding step, the positions predicted at it, previews from the
// tokens known so far, unknown ones zero latents as upstream initialises them),
// with what is MAR's own in each unit event: which positions were recomputed,
// the step's counted FLOPs and the decoder's attention map. MAR has no KV
// cache: the memory fields stay 0 and no retained masks are produced.
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
