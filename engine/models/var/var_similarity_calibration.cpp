#include "engine/models/var/var_similarity_calibration.h"

#include "engine/core/errors.h"
#include "engine/generation/scale/scale_calibration.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

AmsKvCalibration calibrate_key_similarity(const VarModel& model, const std::vector<int64_t>& classes,
                                          const ScaleParams& params, double demanding_fraction,
                                          const std::function<bool()>& cancelled) {
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  AmsKvCalibration c = scale::measure_key_similarity(class_calibration_run(model, classes, params, cancelled),
                                                     demanding_fraction);
  c.model = model.name;
  c.classes = classes;
  c.seed = params.seed;
  c.cfg = params.cfg;
  return c;
}

}  // namespace kvs::var
