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
struct LayerSelectivityProfile;
struct PolicyContext;
class CachePolicy;
}  // namespace kvs

namespace kvs::var {

struct VarModel;

// VAR runs with `full` or a policy written for scale units (cache_policy.h).
// A raster policy may already refuse the scale context while it is built (its
// budget rules count token lines); the message says why either way.
std::unique_ptr<CachePolicy> make_scale_policy(const std::string& spec, const PolicyContext& context);

// The loaded model's calibrations, each made (or read) when a policy first needs
// it and kept for later runs.
struct ScaleCalibrations {
  // HeatKV's scale-attention calibration: the bundle's file, else measured once on
  // a few classes.
  std::shared_ptr<const ScaleAttentionProfile> attention;
  // ScaleKV's attention selectivity (K' = its top_k): measured once on the paper's
  // 10 calibration prompts (10 classes spread over the model's, or all of them).
  std::shared_ptr<const LayerSelectivityProfile> selectivity;
};

GenerationResult run_scale_generation(const VarModel& model, ScaleCalibrations& calibrations,
                                      const GenerationRequest& request, const RunContext& context);

}  // namespace kvs::var
