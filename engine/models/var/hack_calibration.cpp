#include "engine/models/var/hack_calibration.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

HeadVarianceProfile calibrate_head_variance(const VarModel& model, const std::vector<int64_t>& classes,
                                            const ScaleParams& params, const std::function<bool()>& cancelled) {
  const VarConfig& config = model.transformer->config();
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  const int64_t layers = config.depth, heads = config.num_heads, scales = config.scales();
  const auto images = static_cast<int64_t>(classes.size());

  at::Tensor variance = at::zeros({layers, heads, scales}, at::TensorOptions().dtype(at::kDouble));
  ScaleHooks hooks;
  hooks.cancelled = cancelled;
  hooks.wants_attention = [](int64_t) { return true; };
  hooks.on_attention = [&](int64_t layer, int64_t si, const KvAttention& a, const KvStore& store) {
    const int64_t len = a.key_mass.size(-1);
    // m_j: the scale's attention on key j, averaged over its queries (sums to 1 over the keys).
    const at::Tensor m = a.key_mass.narrow(0, 0, images).to(at::kCPU, at::kDouble) /
                         static_cast<double>(config.scale_tokens(si));  // [images, H, len]
    const at::Tensor seen = (store.positions_tensor(layer).narrow(0, 0, images).narrow(2, 0, len) >= 0)
                                .to(at::kDouble);  // the keys the scale saw
    const at::Tensor keys = seen.sum(-1);          // c, [images, H]
    // c x sum m^2 - 1 = Var(m) / mean(m)^2 over the c keys.
    const at::Tensor normalised = at::clamp_min(keys * (m * m * seen).sum(-1) - 1.0, 0.0);
    variance[layer].select(1, si).add_(normalised.sum(0));
  };
  generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);

  HeadVarianceProfile profile;
  profile.model = model.name;
  profile.layers = layers;
  profile.heads = heads;
  for (int64_t si = 0; si < scales; ++si) profile.unit_tokens.push_back(config.scale_tokens(si));
  profile.classes = classes;
  profile.seed = params.seed;
  profile.cfg = params.cfg;
  profile.samples = images;
  const at::Tensor mean = (variance / static_cast<double>(images)).contiguous();
  profile.variance.assign(mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel());
  return profile;
}

}  // namespace kvs::var
