#pragma once
// How `kvstudio-cli calibrate` writes and prints a next-scale calibration, the
// same for every family: the policy's file, a table per policy, and the time
// an AMS-KV file records.
#include <functional>
#include <string>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"

namespace kvs::scale {

// HeatKV: per source scale, how much later scales lean on it (mean S-CAS over heads, and its spread).
std::string scas_table(const ScaleAttentionProfile& profile);
// AMS-KV: per layer the statistic theta is chosen on, and which layers fall below theta.
std::string similarity_table(const AmsKvCalibration& calibration);
// ScaleKV: per layer and scale the ASI's Z-score within the scale (Eq. 3); the
// lowest become drafters (how many depends on the run's budget and drafter share).
std::string selectivity_table(const LayerSelectivityProfile& profile);
// HACK: per layer each head's score (the mean normalised attention variance) and
// its class at the default split (the upper half of the scores contextual).
std::string variance_table(const HeadVarianceProfile& profile);

// Now in UTC, ISO 8601.
std::string utc_now();

// The calibrated scale policies ("heatkv", "scalekv", "hack", "amskv").
bool is_calibrated_scale_policy(const std::string& policy);
// The file a bundle keeps `policy`'s calibration in (heatkv_calibration.json, ...).
std::string calibration_file(const std::string& policy);

// How a family measures each calibration on its calibration set (only the
// asked policy's is called). ScaleKV's is measured with the policy's default K'.
struct ScaleCalibrationMeasures {
  std::function<ScaleAttentionProfile()> heatkv;
  std::function<LayerSelectivityProfile()> scalekv;
  std::function<HeadVarianceProfile()> hack;
  std::function<AmsKvCalibration()> amskv;
};
// Measures `policy`'s calibration, writes it to `out` (AMS-KV's stamped with
// the time and `command`) and returns its table.
std::string write_calibration(const std::string& policy, const std::string& out,
                              const ScaleCalibrationMeasures& measure, const std::string& command);

}  // namespace kvs::scale
