#include "engine/models/var/hack_calibration.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/generation/scale/scale_calibration.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

HeadVarianceProfile calibrate_head_variance(const VarModel& model, const std::vector<int64_t>& classes,
                                            const ScaleParams& params, const std::function<bool()>& cancelled) {
  const VarConfig& config = model.transformer->config();
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  const auto images = static_cast<int64_t>(classes.size());
  scale::CalibrationRun run;
  run.context = scale_policy_context(config, images, params.cfg != 0.0, params.seed);
  run.cancelled = cancelled;
  run.generate = [&](const ScaleHooks& hooks) {
    generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);
  };
  HeadVarianceProfile profile;
  profile.variance = scale::measure_head_variance(run);
  profile.model = model.name;
  profile.layers = config.depth;
  profile.heads = config.num_heads;
  profile.unit_tokens = run.context.unit_tokens;
  profile.classes = classes;
  profile.seed = params.seed;
  profile.cfg = params.cfg;
  profile.samples = images;
  return profile;
}

}  // namespace kvs::var
