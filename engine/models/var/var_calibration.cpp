#include "engine/models/var/var_calibration.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {

std::vector<int64_t> spread_classes(int64_t num_classes, int64_t count) {
  std::vector<int64_t> classes;
  const int64_t n = std::max<int64_t>(1, std::min(count, num_classes));
  for (int64_t i = 0; i < n; ++i) classes.push_back(i * num_classes / n);
  return classes;
}

ScaleAttentionSettings heatkv_calibration_settings(int64_t images, double cfg, int64_t num_classes,
                                                   const ScaleAttentionProfile* stored) {
  ScaleAttentionSettings settings;
  settings.classes = images > 0 ? spread_classes(num_classes, images)
                     : stored   ? stored->classes
                                : spread_classes(num_classes, 2);
  settings.cfg = cfg;
  settings.seed = 0;
  return settings;
}

bool measured_with(const ScaleAttentionProfile& profile, const ScaleAttentionSettings& settings) {
  return profile.classes == settings.classes && profile.cfg == settings.cfg && profile.seed == settings.seed;
}

std::shared_ptr<const ScaleAttentionProfile> stored_scale_attention(const std::string& bundle_dir) {
  const std::string path = bundle_dir + "/" + kScaleAttentionProfileFile;
  std::error_code ec;
  if (bundle_dir.empty() || !std::filesystem::exists(path, ec)) return nullptr;
  return std::make_shared<const ScaleAttentionProfile>(ScaleAttentionProfile::load(path));
}

ScaleAttentionProfile calibrate_scale_attention(const VarModel& model, const std::vector<int64_t>& classes,
                                                const ScaleParams& params, const std::function<bool()>& cancelled) {
  const VarConfig& config = model.transformer->config();
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  const int64_t layers = config.depth, heads = config.num_heads, scales = config.scales(),
                total = config.total_tokens();
  const auto images = static_cast<int64_t>(classes.size());

  // position -> scale (index 0: empty slot, position -1).
  std::vector<int64_t> table(static_cast<size_t>(total) + 1, 0);
  table[0] = scales;  // empty slots land in an extra, discarded bin
  for (int64_t si = 0; si < scales; ++si)
    for (int64_t i = 0; i < config.scale_tokens(si); ++i)
      table[static_cast<size_t>(config.scale_begin(si) + i + 1)] = si;
  const at::Tensor scale_of = at::tensor(table, at::TensorOptions().dtype(at::kLong));

  at::Tensor beta = at::zeros({layers, heads, scales, scales}, at::TensorOptions().dtype(at::kDouble));
  ScaleHooks hooks;
  hooks.cancelled = cancelled;
  hooks.wants_attention = [](int64_t) { return true; };
  hooks.on_attention = [&](int64_t layer, int64_t si, const KvAttention& a, const KvStore& store) {
    const int64_t len = a.key_mass.size(-1);
    const at::Tensor mass = a.key_mass.narrow(0, 0, images).to(at::kCPU, at::kDouble);  // [images, H, len]
    const at::Tensor pos = store.positions_tensor(layer).narrow(0, 0, images).narrow(2, 0, len);
    const at::Tensor bins =
        at::index_select(scale_of, 0, (pos.clamp(-1, total - 1) + 1).reshape({-1})).reshape(pos.sizes());
    at::Tensor by_scale = at::zeros({images, heads, scales + 1}, mass.options()).scatter_add_(2, bins, mass);
    // beta^d[k1 = si][k2] = mass on scale k2 / t_si, summed over images here.
    beta[layer].select(1, si).add_(by_scale.narrow(2, 0, scales).sum(0) / static_cast<double>(config.scale_tokens(si)));
  };
  generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);

  ScaleAttentionProfile profile;
  profile.model = model.name;
  profile.layers = layers;
  profile.heads = heads;
  for (int64_t si = 0; si < scales; ++si) profile.unit_tokens.push_back(config.scale_tokens(si));
  profile.classes = classes;
  profile.seed = params.seed;
  profile.cfg = params.cfg;
  profile.samples = images;
  const at::Tensor mean = (beta / static_cast<double>(images)).contiguous();
  profile.beta.assign(mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel());
  return profile;
}

}  // namespace kvs::var
