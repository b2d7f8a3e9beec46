#pragma once
// The raster family's generation session (LlamaGen): one unit per token line.
// Emits StartedEvent (unit "line"), a TokenProgressEvent per token and a
// UnitDoneEvent per line (KV memory, retained masks, the attention of the line's
// last token, a preview decoded with code 0 for the rows not generated yet),
// PolicyChangedEvent at line boundaries; returns the images and the run's memory.
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::llamagen {

struct LlamaGenModel;

GenerationResult run_raster_generation(const LlamaGenModel& model, const GenerationRequest& request,
                                       const RunContext& context);

}  // namespace kvs::llamagen
