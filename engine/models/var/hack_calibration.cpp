#include "engine/models/var/hack_calibration.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

HeadVarianceProfile calibrate_head_variance(const VarModel& model, const std::vector<int64_t>& classes,
                                            const ScaleParams& params, const std::function<bool()>& cancelled) {
  const scale::CalibrationRun run = class_calibration_run(model, classes, params, cancelled);
  HeadVarianceProfile profile;
  profile.variance = scale::measure_head_variance(run);
  scale::record_calibration(profile, run, model.name, classes, params.seed, params.cfg);
  return profile;
}

}  // namespace kvs::var
