#pragma once
// What the calibrated scale policies measure on a next-scale model, written once
// for every family: HeatKV's scale-to-scale attention (§3.1, Eq. 2), HACK's
// per-head attention variance, ScaleKV's attention selectivity and AMS-KV's
// inter-scale key similarity (its threshold profiling). A family
// hands in a full-cache run of its calibration set (class labels for VAR,
// prompts for Infinity) and its geometry; the measurements read the
// conditional rows only (the first `images` rows of the cache).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
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

// What a scale-attention or head-variance profile records of how it was
// measured: the model, the run's geometry, the calibration set's labels (classes
// or prompt indices), its seed and CFG, and how many images it averaged.
template <typename Profile>
void record_calibration(Profile& profile, const CalibrationRun& run, const std::string& model,
                        const std::vector<int64_t>& labels, uint64_t seed, double cfg) {
  profile.model = model;
  profile.layers = run.context.n_layer;
  profile.heads = run.context.n_head;
  profile.unit_tokens = run.context.unit_tokens;
  profile.classes = labels;
  profile.seed = seed;
  profile.cfg = cfg;
  profile.samples = run.images();
}

// beta [layers][heads][scales][scales] (Eq. 2): the attention mass scale k1's
// queries put on scale k2's keys, per query, averaged over the images.
std::vector<double> measure_scale_attention(const CalibrationRun& run);
// [layers][heads][scales]: c * sum m^2 - 1 (Var(m) / mean(m)^2 over the c keys
// a scale's averaged query sees), averaged over the images.
std::vector<double> measure_head_variance(const CalibrationRun& run);
// ScaleKV's drafter / refiner selectivity with K' = top_k (labels: the calibration set, recorded in the profile).
LayerSelectivityProfile measure_attention_selectivity(const CalibrationRun& run, int64_t top_k,
                                                      const std::vector<int64_t>& labels);
// AMS-KV's threshold profiling (amskv_calibration.h has the rule): every layer's
// S at every scale per image (the policy's own computation), the decision
// scales of AMS-KV's default budgets on the run's schedule, and theta placing
// `demanding_fraction` of the layers below it. Fills the geometry, budgets,
// similarity and theta; model, labels, seed, cfg, created and command are the caller's.
AmsKvCalibration measure_key_similarity(const CalibrationRun& run, double demanding_fraction);

}  // namespace kvs::scale
