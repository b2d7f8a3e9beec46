#pragma once
// The next-scale family's generation session (VAR): one unit per scale. Emits
// StartedEvent (unit "scale"), a TokenProgressEvent and a UnitDoneEvent per scale
// (KV memory, retained masks over the flattened multi-scale positions, the
// attention of the scale's queries, and a preview decoded from the current
// f_hat: after any scale the whole image is there, coarse), PolicyChangedEvent
// at scale boundaries; returns the images and the run's memory.
#include <memory>
#include <string>

#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs {
struct ScaleAttentionProfile;
struct PolicyContext;
class CachePolicy;
}  // namespace kvs

namespace kvs::var {

struct VarModel;

// VAR runs with `full` or a policy written for scale units (cache_policy.h).
// A raster policy may already refuse the scale context while it is built (its
// budget rules count token lines); the message says why either way.
std::unique_ptr<CachePolicy> make_scale_policy(const std::string& spec, const PolicyContext& context);

// `profile_slot` is the loaded model's scale-attention calibration (HeatKV):
// filled from the bundle's file when a policy first needs it, else calibrated
// once on a few classes, and kept for later runs.
GenerationResult run_scale_generation(const VarModel& model, std::shared_ptr<const ScaleAttentionProfile>& profile_slot,
                                      const GenerationRequest& request, const RunContext& context);

}  // namespace kvs::var
