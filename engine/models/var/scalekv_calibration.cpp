#include "engine/models/var/scalekv_calibration.h"

#include <ATen/Functions.h>

#include "engine/core/errors.h"
#include "engine/generation/scale/scale_calibration.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

LayerSelectivityProfile calibrate_attention_selectivity(const VarModel& model, const std::vector<int64_t>& classes,
                                                        const ScaleParams& params, int64_t top_k,
                                                        const std::function<bool()>& cancelled) {
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  scale::CalibrationRun run;
  run.context = scale_policy_context(model.transformer->config(), static_cast<int64_t>(classes.size()),
                                     params.cfg != 0.0, params.seed);
  run.cancelled = cancelled;
  run.generate = [&](const ScaleHooks& hooks) {
    generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);
  };
  LayerSelectivityProfile profile = scale::measure_attention_selectivity(run, top_k, classes);
  profile.model = model.name;
  profile.seed = params.seed;
  profile.cfg = params.cfg;
  return profile;
}

}  // namespace kvs::var
