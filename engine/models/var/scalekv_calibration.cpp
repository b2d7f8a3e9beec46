#include "engine/models/var/scalekv_calibration.h"

#include <ATen/Functions.h>

#include "engine/cache/policies/attention_selectivity_meter.h"
#include "engine/core/errors.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

LayerSelectivityProfile calibrate_attention_selectivity(const VarModel& model, const std::vector<int64_t>& classes,
                                                        const ScaleParams& params, int64_t top_k,
                                                        const std::function<bool()>& cancelled) {
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  const VarConfig& config = model.transformer->config();
  const PolicyContext context = scale_policy_context(config, static_cast<int64_t>(classes.size()), params.cfg != 0.0,
                                                     params.seed);
  AttentionSelectivityMeter meter(context, top_k);
  ScaleHooks hooks;
  hooks.cancelled = cancelled;
  hooks.policy = [&meter]() -> CachePolicy* { return &meter; };
  generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);
  LayerSelectivityProfile profile = meter.profile(classes);
  profile.model = model.name;
  profile.seed = params.seed;
  profile.cfg = params.cfg;
  return profile;
}

}  // namespace kvs::var
