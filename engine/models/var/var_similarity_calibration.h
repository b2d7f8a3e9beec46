#pragma once
// AMS-KV's offline threshold profiling (amskv_calibration.h has the rule):
// full-cache generation of one image per class, measuring every layer's
// inter-scale key similarity S at every scale with the policy's own computation
// (scale_key_similarity.h), then theta from the per-layer statistics.
#include <functional>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/models/var/var_generation.h"

namespace kvs::var {

struct VarModel;

// One image per class, generated together with `params` (CFG as given: the
// conditional rows are measured, as the policy decides on them) and the full
// cache. The decision scales are those of AMS-KV's default budgets; the layers
// made cache-demanding are `demanding_fraction` of them. `cancelled` is checked
// between layers (CancelledError). created/command are left to the caller.
AmsKvCalibration calibrate_key_similarity(const VarModel& model, const std::vector<int64_t>& classes,
                                          const ScaleParams& params, double demanding_fraction = 1.0 / 6.0,
                                          const std::function<bool()>& cancelled = {});

}  // namespace kvs::var
