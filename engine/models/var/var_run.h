#pragma once
// A VAR run (engine/generation/scale/scale_stream.h: one unit per scale) and
// what the loaded model keeps between runs: its calibrations, read from the
// bundle or measured on first use, handed to the policies that ask for them.
#include <map>
#include <memory>
#include <string>

#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs {
struct ScaleAttentionProfile;
struct LayerSelectivityProfile;
struct AmsKvCalibration;
struct HeadVarianceProfile;
struct PolicyContext;
class CachePolicy;
}  // namespace kvs

namespace kvs::var {

struct VarModel;

// The loaded model's calibrations, kept for later runs.
struct VarCalibrations {
  // HeatKV's scale-attention calibrations by (calibration_images, CFG): 0 (the
  // default) is measured on the bundle file's classes (else 2), N > 0 on N
  // classes spread over the model's; at the run's CFG unless calibration_cfg
  // names one; the bundle's file when it was made with exactly those settings,
  // else measured once and kept.
  std::map<std::pair<int64_t, double>, std::shared_ptr<const ScaleAttentionProfile>> attention;
  // AMS-KV's threshold profiling: the bundle's file, when it has one, once an
  // amskv run without theta= needs it (none is made on the way: without it the
  // paper's theta stays).
  std::shared_ptr<const AmsKvCalibration> similarity;
  // ScaleKV's attention selectivity (K' = its top_k): measured once on the paper's
  // 10 calibration prompts (10 classes spread over the model's, or all of them).
  std::shared_ptr<const LayerSelectivityProfile> selectivity;
  // HACK's head classification (per-head attention variance): the bundle's file
  // when a hack run first needs it, else measured once on HACK's 10 calibration
  // prompts (10 classes spread over the model's, or all of them).
  std::shared_ptr<const HeadVarianceProfile> head_variance;
};

// The bundle's AMS-KV calibration when it has the file (FormatError for a
// corrupt one), null otherwise. check_policy and the session share it (a
// mismatched one is refused when the policy that asks for it is made).
std::shared_ptr<const AmsKvCalibration> stored_amskv_calibration(const std::string& bundle_dir);

// HeatKV's calibration on `images` classes (0: the bundle file's classes, else
// 2 spread ones; N > 0: N classes spread over the model's) at CFG `cfg` (0: the
// request's): the one kept in `calibrations`, else read or measured now and
// kept there, as `kvstudio-cli calibrate` measures (seed 0, the default
// sampler). An impossible `images` is an InvalidArgumentError naming it, before
// any work; measuring checks ctx.cancelled between layers.
std::shared_ptr<const ScaleAttentionProfile> heatkv_calibration_for(const VarModel& model,
                                                                    VarCalibrations& calibrations, int64_t images,
                                                                    double cfg, const GenerationRequest& request,
                                                                    const RunContext& ctx);
// The same for a heatkv `spec` (its calibration_images and calibration_cfg).
std::shared_ptr<const ScaleAttentionProfile> heatkv_calibration_for(const VarModel& model,
                                                                    VarCalibrations& calibrations,
                                                                    const std::string& spec,
                                                                    const GenerationRequest& request,
                                                                    const RunContext& ctx);

GenerationResult run_scale_generation(const VarModel& model, VarCalibrations& calibrations,
                                      const GenerationRequest& request, const RunContext& context);

}  // namespace kvs::var
