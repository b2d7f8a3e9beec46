#pragma once
// The calibrations HeatKV, HACK and ScaleKV need, measured on an Infinity model
// on first use and kept with the loaded model (engine/generation/scale/
// scale_calibration.h measures; this file runs the calibration set). The set is
// prompts, not classes: HeatKV's paper uses N = 10 prompts written by a
// vision-language model that it does not publish, so the default here is the
// first 10 of KV Studio's own caption list (text/sentencepiece_trainer.h
// caption_corpus), and calibration_images=N takes its first N (at most 30).
// Each calibration is measured on the run's schedule (image size) and CFG, with
// the run's sampling and seed 0, and is kept per schedule: HeatKV ranks heads
// per source scale, and the scales differ between aspect ratios. AMS-KV takes
// the paper's threshold (no profiling on Infinity yet).
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "engine/cache/policies/calibration_provider.h"
#include "engine/models/infinity/infinity_generation.h"

namespace kvs::infinity {

struct InfinityModel;

// What a loaded model keeps between runs.
struct InfinityCalibrations {
  std::map<std::tuple<std::string, int64_t, double>, std::shared_ptr<const ScaleAttentionProfile>> attention;
  std::map<std::pair<std::string, double>, std::shared_ptr<const HeadVarianceProfile>> variance;
  std::map<std::tuple<std::string, double, int64_t>, std::shared_ptr<const LayerSelectivityProfile>> selectivity;
};

// The first `count` calibration prompts (InvalidArgumentError beyond the list).
std::vector<std::string> calibration_prompts(int64_t count);

// A provider for one run: `schedule`, `params` (its CFG and sampling) and
// `cancelled` are the run's; measurements land in `kept`.
std::shared_ptr<CalibrationProvider> infinity_calibration_provider(const InfinityModel& model,
                                                                   InfinityCalibrations& kept,
                                                                   const InfinitySchedule& schedule,
                                                                   const InfinityParams& params,
                                                                   std::function<bool()> cancelled);

}  // namespace kvs::infinity
