#pragma once
// The calibrations HeatKV, HACK, ScaleKV and AMS-KV use on an Infinity model
// (engine/generation/scale/scale_calibration.h measures; this file runs the
// calibration set, stores and finds them). The set is prompts, not classes:
// HeatKV's paper uses N = 10 prompts written by a vision-language model that it
// does not publish, so the default here is the first 10 of KV Studio's own
// caption list (text/sentencepiece_trainer.h caption_corpus), and N prompts are
// its first N (at most 30). A calibration belongs to one image size: HeatKV
// ranks heads per source scale, and the scales differ between aspect ratios and
// pixel budgets. `kvstudio-cli calibrate` writes one file per policy and size
// into the bundle (heatkv_calibration.1024x1024.json, ...); a run uses the
// bundle's file for its size when it was made with the settings the run asks,
// else measures one on first use (the run's CFG, seed 0, the default sampler,
// as calibrate measures) and keeps it with the loaded model. AMS-KV is never
// measured on first use: without a file it keeps the paper's threshold.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/models/infinity/infinity_generation.h"

namespace kvs::infinity {

struct InfinityModel;
struct InfinityImageSize;

// What a loaded model keeps between runs, per image size.
struct InfinityCalibrations {
  std::map<std::tuple<std::string, int64_t, double>, std::shared_ptr<const ScaleAttentionProfile>> attention;
  std::map<std::pair<std::string, double>, std::shared_ptr<const HeadVarianceProfile>> variance;
  std::map<std::tuple<std::string, double, int64_t>, std::shared_ptr<const LayerSelectivityProfile>> selectivity;
  std::map<std::string, std::shared_ptr<const AmsKvCalibration>> similarity;  // null: the bundle has none
};

// The first `count` calibration prompts (InvalidArgumentError beyond the list).
std::vector<std::string> calibration_prompts(int64_t count);
inline constexpr int64_t kInfinityCalibrationPrompts = 10;     // HeatKV §4: N = 10 (HACK uses the same)
inline constexpr int64_t kInfinityCalibrationPromptList = 30;  // the caption list's prompts (then negative phrases)

// Where a bundle keeps a policy's calibration for one image size: `file` (e.g.
// heatkv_calibration.json) with the size before its extension.
std::string stored_calibration_path(const std::string& bundle_dir, const std::string& file,
                                    const InfinityImageSize& size);

// What an offline calibration is measured with: the first `prompts` calibration
// prompts at `size`, CFG `cfg` at every scale, the default sampler, `seed`.
struct InfinityCalibrationSet {
  int64_t prompts = kInfinityCalibrationPrompts;
  double cfg = 3.0;
  uint64_t seed = 0;
};

// The measurements, each on one full-cache run of the set (`cancelled` between layers).
ScaleAttentionProfile calibrate_scale_attention(const InfinityModel& model, const InfinityImageSize& size,
                                                const InfinityCalibrationSet& set,
                                                const std::function<bool()>& cancelled = {});
HeadVarianceProfile calibrate_head_variance(const InfinityModel& model, const InfinityImageSize& size,
                                            const InfinityCalibrationSet& set,
                                            const std::function<bool()>& cancelled = {});
LayerSelectivityProfile calibrate_attention_selectivity(const InfinityModel& model, const InfinityImageSize& size,
                                                        const InfinityCalibrationSet& set, int64_t top_k,
                                                        const std::function<bool()>& cancelled = {});
AmsKvCalibration calibrate_key_similarity(const InfinityModel& model, const InfinityImageSize& size,
                                          const InfinityCalibrationSet& set, double demanding_fraction,
                                          const std::function<bool()>& cancelled = {});

// A provider for one run at `size`: `bundle_dir` holds the stored calibrations
// ("" : none), `run_cfg` is the run's CFG; measurements land in `kept`.
std::shared_ptr<CalibrationProvider> infinity_calibration_provider(const InfinityModel& model,
                                                                   InfinityCalibrations& kept,
                                                                   const std::string& bundle_dir,
                                                                   const InfinityImageSize& size, double run_cfg,
                                                                   std::function<bool()> cancelled);

}  // namespace kvs::infinity
