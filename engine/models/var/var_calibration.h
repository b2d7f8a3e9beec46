#pragma once
// HeatKV's offline calibration (HeatKV §3.1): full-cache generation of a few
// images, measuring every layer's and head's scale-to-scale attention mass beta
// (Eq. 2) on the conditional rows, averaged over the images.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/generation/scale/scale_calibration.h"
#include "engine/models/var/var_generation.h"

namespace kvs::var {

struct VarModel;

// One image per class, generated together with `params` (CFG as given) and the
// full cache. `cancelled` is checked between layers (CancelledError).
// A full-cache run of one image per class with `params` (CFG as given), as the
// scale calibrations measure it (HeatKV's, HACK's, ScaleKV's).
scale::CalibrationRun class_calibration_run(const VarModel& model, const std::vector<int64_t>& classes,
                                            const ScaleParams& params, const std::function<bool()>& cancelled);

ScaleAttentionProfile calibrate_scale_attention(const VarModel& model, const std::vector<int64_t>& classes,
                                                const ScaleParams& params, const std::function<bool()>& cancelled = {});

// `count` classes spread evenly over the model's classes (the default calibration set).
std::vector<int64_t> spread_classes(int64_t num_classes, int64_t count);

// What a HeatKV calibration is measured with, and so its key: a stored or kept
// calibration serves a run only when all of these match. Measured as
// `kvstudio-cli calibrate` measures (the default sampler).
struct ScaleAttentionSettings {
  std::vector<int64_t> classes;
  double cfg = 1.0;
  uint64_t seed = 0;
};

// The settings of a HeatKV calibration on `images` classes (heatkv_calibration_images)
// at `cfg` (heatkv_calibration_cfg): N > 0 -> N classes spread over the model's,
// 0 -> those of the bundle's file `stored` (else 2 spread classes); seed 0.
ScaleAttentionSettings heatkv_calibration_settings(int64_t images, double cfg, int64_t num_classes,
                                                   const ScaleAttentionProfile* stored);
bool measured_with(const ScaleAttentionProfile& profile, const ScaleAttentionSettings& settings);

// The bundle's stored HeatKV calibration (kScaleAttentionProfileFile); null when
// the bundle has none. A corrupt file is a FormatError, not silently replaced.
std::shared_ptr<const ScaleAttentionProfile> stored_scale_attention(const std::string& bundle_dir);

}  // namespace kvs::var
