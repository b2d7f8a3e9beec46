#pragma once
// HACK's offline head classification (HACK, arXiv 2504.09261: heads split once,
// offline, by their attention's variance): a full-cache generation of a few
// images measuring every layer's and head's normalised variance of the per-key
// attention at every scale (head_variance_profile.h), on the conditional rows,
// averaged over the images.
#include <functional>
#include <vector>

#include "engine/cache/policies/head_variance_profile.h"
#include "engine/models/var/var_generation.h"

namespace kvs::var {

struct VarModel;

// One image per class, generated together with `params` (CFG as given) and the
// full cache. `cancelled` is checked between layers (CancelledError).
HeadVarianceProfile calibrate_head_variance(const VarModel& model, const std::vector<int64_t>& classes,
                                            const ScaleParams& params, const std::function<bool()>& cancelled = {});

}  // namespace kvs::var
