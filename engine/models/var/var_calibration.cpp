#include "engine/models/var/var_calibration.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/generation/scale/scale_calibration.h"
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

scale::CalibrationRun class_calibration_run(const VarModel& model, const std::vector<int64_t>& classes,
                                            const ScaleParams& params, const std::function<bool()>& cancelled) {
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  scale::CalibrationRun run;
  run.context = scale_policy_context(model.transformer->config(), static_cast<int64_t>(classes.size()),
                                     params.cfg != 0.0, params.seed);
  run.cancelled = cancelled;
  run.generate = [&model, classes, params](const ScaleHooks& hooks) {
    generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);
  };
  return run;
}

ScaleAttentionProfile calibrate_scale_attention(const VarModel& model, const std::vector<int64_t>& classes,
                                                const ScaleParams& params, const std::function<bool()>& cancelled) {
  const scale::CalibrationRun run = class_calibration_run(model, classes, params, cancelled);
  ScaleAttentionProfile profile;
  profile.beta = scale::measure_scale_attention(run);
  scale::record_calibration(profile, run, model.name, classes, params.seed, params.cfg);
  return profile;
}

}  // namespace kvs::var
