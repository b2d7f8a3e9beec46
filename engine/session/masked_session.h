#pragma once
// GenerationSession's driver for the masked family (MAR): one unit per decoding
// step. Emits the same events as the other drivers: StartedEvent (unit "step"),
// then per step a TokenProgressEvent (tokens known so far) and a UnitDoneEvent
// with the positions predicted at the step (image 0, in generation order) and,
// when asked for, a preview decoded from the tokens known so far (unknown tokens
// are zero latents, as upstream initialises them), then the result. MAR has no
// KV cache: the memory fields stay 0, retained masks and attention maps are not
// produced. Policies: "full" (full recomputation every step) or "lazymar:..."
// (LazyMAR's feature caches, engine/cache/policies/lazymar_policy.h); each unit
// event says which positions were recomputed and the step's counted FLOPs, and
// the result carries the FLOPs per image.
#include <functional>
#include <string>

#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_session.h"

namespace kvs {

namespace mar {
struct MarModel;
}

struct MaskedSessionContext {
  const mar::MarModel* model = nullptr;
  const GenerationRequest* request = nullptr;
  EventSink* sink = nullptr;
  std::string device_description;
  int cuda_index = -1;  // the CUDA device of the run, -1 on the CPU (device memory in unit events)
  std::function<bool()> cancelled;
};

GenerationResult run_masked_generation(const MaskedSessionContext& context);

}  // namespace kvs
