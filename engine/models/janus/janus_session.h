#pragma once
// A Janus-Pro generation for the session: prompt -> templated ids -> streamed
// lines (one unit per token row of the 24x24 grid), each with its KV snapshot,
// attention map (prompt positions first) and preview; live policy changes at
// line ends.
#include "engine/models/janus/janus_model.h"
#include "engine/session/model_family.h"

namespace kvs::janus {

GenerationResult run_prompt_generation(const JanusModel& model, const GenerationRequest& request,
                                       const RunContext& context);

}  // namespace kvs::janus
