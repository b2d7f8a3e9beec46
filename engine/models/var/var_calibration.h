#pragma once
// HeatKV's offline calibration (HeatKV §3.1): full-cache generation of a few
// images, measuring every layer's and head's scale-to-scale attention mass beta
// (Eq. 2) on the conditional rows, averaged over the images.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/models/var/scale_generation.h"

namespace kvs::var {

struct VarModel;

// One image per class, generated together with `params` (CFG as given) and the
// full cache. `cancelled` is checked between layers (CancelledError).
ScaleAttentionProfile calibrate_scale_attention(const VarModel& model, const std::vector<int64_t>& classes,
                                                const ScaleParams& params, const std::function<bool()>& cancelled = {});

// `count` classes spread evenly over the model's classes (the default calibration set).
std::vector<int64_t> spread_classes(int64_t num_classes, int64_t count);

// The bundle's stored HeatKV calibration (kScaleAttentionProfileFile) when it
// was measured on exactly `classes`; null when the bundle has none or it was
// measured on others. A corrupt file is a FormatError, not silently replaced.
std::shared_ptr<const ScaleAttentionProfile> stored_scale_attention_on(const std::string& bundle_dir,
                                                                       const std::vector<int64_t>& classes);

}  // namespace kvs::var
