#pragma once
// ScaleKV's offline calibration (ScaleKV §3.3, "prior to inference using minimal
// calibration data"): a full-cache generation of a few images measuring every
// layer's Attention Selectivity Index at every scale (AttentionSelectivityMeter).
#include <functional>
#include <vector>

#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/models/var/var_generation.h"

namespace kvs::var {

struct VarModel;

// One image per class, generated together with `params` (CFG as given) and the
// full cache; K' = top_k. `cancelled` is checked between layers (CancelledError).
LayerSelectivityProfile calibrate_attention_selectivity(const VarModel& model, const std::vector<int64_t>& classes,
                                                        const ScaleParams& params, int64_t top_k,
                                                        const std::function<bool()>& cancelled = {});

}  // namespace kvs::var
