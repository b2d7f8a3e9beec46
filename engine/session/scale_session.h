#pragma once
// GenerationSession's driver for the next-scale family (VAR): one unit per scale.
// Emits the same events as the raster driver: StartedEvent (unit "scale"), a
// TokenProgressEvent and a UnitDoneEvent per scale (KV memory, retained masks over
// the flattened multi-scale positions, the attention of the scale's queries, and
// a preview decoded from the current f_hat: after any scale the whole image is
// there, coarse), PolicyChangedEvent at scale boundaries, then the result.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_session.h"

namespace kvs {

struct ScaleAttentionProfile;

namespace var {
struct VarModel;
}

struct ScaleSessionContext {
  const var::VarModel* model = nullptr;
  const GenerationRequest* request = nullptr;
  EventSink* sink = nullptr;
  std::string device_description;
  int cuda_index = -1;  // the CUDA device of the run, -1 on the CPU (device memory in unit events)
  std::function<bool()> cancelled;
  // The bundle's folder and the session's slot for the model's scale-attention
  // calibration (HeatKV): loaded from DIR/heatkv_calibration.json when a policy
  // needs it, else calibrated once on a few classes and kept for later runs.
  std::string bundle_dir;
  std::shared_ptr<const ScaleAttentionProfile>* scale_profile = nullptr;
  // A policy change requested so far (taken at each scale boundary), if any.
  std::function<std::optional<std::string>()> take_policy_change;
};

GenerationResult run_scale_generation(const ScaleSessionContext& context);

}  // namespace kvs
