#pragma once
// What the calibrated scale policies measure on a next-scale model, written once
// for every family: HeatKV's scale-to-scale attention (§3.1, Eq. 2), HACK's
// per-head attention variance and ScaleKV's attention selectivity. A family
// hands in a full-cache run of its calibration set (class labels for VAR,
// prompts for Infinity) and its geometry; the measurements read the
// conditional rows only (the first `images` rows of the cache).
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/generation/scale/scale_loop.h"

namespace kvs::scale {

struct CalibrationRun {
  PolicyContext context;  // the run's geometry (layers, heads, unit_tokens, batch = images, cfg)
  // Generates the calibration images with these hooks (the full cache unless the hooks set a policy).
  std::function<void(const ScaleHooks& hooks)> generate;
  std::function<bool()> cancelled;
  int64_t images() const { return context.batch; }
};

// beta [layers][heads][scales][scales] (Eq. 2): the attention mass scale k1's
// queries put on scale k2's keys, per query, averaged over the images.
std::vector<double> measure_scale_attention(const CalibrationRun& run);
// [layers][heads][scales]: c * sum m^2 - 1 (Var(m) / mean(m)^2 over the c keys
// a scale's averaged query sees), averaged over the images.
std::vector<double> measure_head_variance(const CalibrationRun& run);
// ScaleKV's drafter / refiner selectivity with K' = top_k (labels: the calibration set, recorded in the profile).
LayerSelectivityProfile measure_attention_selectivity(const CalibrationRun& run, int64_t top_k,
                                                      const std::vector<int64_t>& labels);

}  // namespace kvs::scale
