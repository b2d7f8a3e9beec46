#include "engine/models/var/scalekv_calibration.h"

#include <ATen/Functions.h>

#include "engine/core/errors.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

LayerSelectivityProfile calibrate_attention_selectivity(const VarModel& model, const std::vector<int64_t>& classes,
                                                        const ScaleParams& params, int64_t top_k,
                                                        const std::function<bool()>& cancelled) {
  const scale::CalibrationRun run = class_calibration_run(model, classes, params, cancelled);
  LayerSelectivityProfile profile = scale::measure_attention_selectivity(run, top_k, classes);
  profile.model = model.name;
  profile.seed = params.seed;
  profile.cfg = params.cfg;
  return profile;
}

}  // namespace kvs::var
