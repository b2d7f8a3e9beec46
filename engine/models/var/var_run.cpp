#include "engine/models/var/var_run.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/generation/scale/scale_stream.h"
#include "engine/models/var/hack_calibration.h"
#include "engine/models/var/scalekv_calibration.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"
#include "engine/session/bundle_info.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/model_family.h"
#include "engine/session/request_checks.h"

namespace kvs::var {
namespace {

std::vector<RgbImage> decode_fhat(const VarModel& model, const at::Tensor& f_hat) {
  return to_rgb_images(var_images_to_uint8_nhwc(model.vqvae->fhat_to_img(f_hat)));
}

// ScaleKV's calibration for K' = top_k: the one kept with the loaded model, the
// bundle's file (when measured with the same K'), else a fresh one (the paper's
// 10 calibration prompts: 10 classes spread over the model's, or all of them),
// kept for later runs. A corrupt file is an error, not silently replaced.
std::shared_ptr<const LayerSelectivityProfile> selectivity_for(const VarModel& model,
                                                               std::shared_ptr<const LayerSelectivityProfile>& slot,
                                                               int64_t top_k, const GenerationRequest& request,
                                                               const RunContext& ctx) {
  if (slot && slot->top_k == top_k) return slot;
  auto log = module_logger("session");
  const std::string path = ctx.bundle_dir + "/" + kScaleKvCalibrationFile;
  std::error_code ec;
  if (!ctx.bundle_dir.empty() && std::filesystem::exists(path, ec)) {
    auto stored = std::make_shared<const LayerSelectivityProfile>(LayerSelectivityProfile::load(path));
    if (stored->top_k == top_k) {
      log.info("loaded the ScaleKV calibration " + path);
      slot = stored;
      return slot;
    }
    log.info("the ScaleKV calibration " + path + " was measured with top_k=" + std::to_string(stored->top_k) +
             ", this run asks top_k=" + std::to_string(top_k) + ": measuring one for it");
  }
  const std::vector<int64_t> classes = spread_classes(model.transformer->config().num_classes, 10);
  log.info("measuring the attention selectivity of " + model.name + " on " + std::to_string(classes.size()) +
           " classes (ScaleKV's calibration, first use)");
  ScaleParams params;
  params.cfg = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = 0;
  slot = std::make_shared<const LayerSelectivityProfile>(
      calibrate_attention_selectivity(model, classes, params, top_k, ctx.cancelled));
  return slot;
}

// HACK's calibration: the one kept with the loaded model, the bundle's file, or
// a fresh one on HACK's 10 calibration prompts (10 classes spread over the
// model's, or all of them), kept for later runs.
std::shared_ptr<const HeadVarianceProfile> head_variance_for(const VarModel& model,
                                                             std::shared_ptr<const HeadVarianceProfile>& slot,
                                                             const GenerationRequest& request, const RunContext& ctx) {
  if (slot) return slot;
  auto log = module_logger("session");
  const std::string path = ctx.bundle_dir + "/" + kHeadVarianceProfileFile;
  std::error_code ec;
  if (!ctx.bundle_dir.empty() && std::filesystem::exists(path, ec)) {
    slot = std::make_shared<const HeadVarianceProfile>(HeadVarianceProfile::load(path));
    log.info("loaded the HACK head calibration " + path);
    return slot;
  }
  const std::vector<int64_t> classes = spread_classes(model.transformer->config().num_classes, 10);
  log.info("measuring the head attention variance of " + model.name + " on " + std::to_string(classes.size()) +
           " classes (HACK's calibration, first use; 'kvstudio-cli calibrate --policy hack --model DIR' stores one)");
  ScaleParams params;
  params.cfg = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = 0;
  slot = std::make_shared<const HeadVarianceProfile>(calibrate_head_variance(model, classes, params, ctx.cancelled));
  return slot;
}

// The loaded model's calibrations as the policies ask for them while they are
// built (calibration_provider.h): kept in `kept` for later runs, else read from
// the bundle or measured on first use (a calibration made on the way is not
// counted in the run's time).
class VarCalibrationProvider : public CalibrationProvider {
 public:
  VarCalibrationProvider(const VarModel& model, VarCalibrations& kept, const GenerationRequest& request,
                         const RunContext& ctx)
      : model_(model), kept_(kept), request_(request), ctx_(ctx) {}

  std::shared_ptr<const ScaleAttentionProfile> scale_attention(int64_t images, double cfg) override {
    return heatkv_calibration_for(model_, kept_, images, cfg, request_, ctx_);
  }
  std::shared_ptr<const AmsKvCalibration> amskv_similarity() override {
    if (!kept_.similarity) kept_.similarity = stored_amskv_calibration(ctx_.bundle_dir);
    return kept_.similarity;
  }
  std::shared_ptr<const LayerSelectivityProfile> layer_selectivity(int64_t top_k) override {
    return selectivity_for(model_, kept_.selectivity, top_k, request_, ctx_);
  }
  std::shared_ptr<const HeadVarianceProfile> head_variance() override {
    return head_variance_for(model_, kept_.head_variance, request_, ctx_);
  }

 private:
  const VarModel& model_;
  VarCalibrations& kept_;
  const GenerationRequest& request_;
  const RunContext& ctx_;
};

}  // namespace

std::shared_ptr<const ScaleAttentionProfile> heatkv_calibration_for(const VarModel& model,
                                                                    VarCalibrations& calibrations,
                                                                    const std::string& spec,
                                                                    const GenerationRequest& request,
                                                                    const RunContext& ctx) {
  const int64_t images = heatkv_calibration_images(spec, model.transformer->config().num_classes);
  const double cfg = heatkv_calibration_cfg(spec, 0.0);
  return heatkv_calibration_for(model, calibrations, images, cfg, request, ctx);
}

std::shared_ptr<const ScaleAttentionProfile> heatkv_calibration_for(const VarModel& model,
                                                                    VarCalibrations& calibrations, int64_t images,
                                                                    double calibration_cfg,
                                                                    const GenerationRequest& request,
                                                                    const RunContext& ctx) {
  const int64_t num_classes = model.transformer->config().num_classes;
  check_heatkv_calibration_images(images, num_classes);
  // The calibration's settings are its key: the heads are ranked on attention
  // measured at the CFG of the runs they compress, unless calibration_cfg names one.
  const double cfg = calibration_cfg > 0 ? calibration_cfg : request.cfg_scale;
  std::shared_ptr<const ScaleAttentionProfile>& slot = calibrations.attention[{images, cfg}];
  if (slot) return slot;
  auto log = module_logger("session");
  const std::string path = ctx.bundle_dir + "/" + kScaleAttentionProfileFile;
  const std::shared_ptr<const ScaleAttentionProfile> stored = stored_scale_attention(ctx.bundle_dir);
  const ScaleAttentionSettings settings = heatkv_calibration_settings(images, cfg, num_classes, stored.get());
  const std::string what = std::to_string(settings.classes.size()) + " classes at CFG " +
                           format_text("%g", settings.cfg) +
                           (images > 0 ? " (HeatKV calibration_images=" + std::to_string(images) + ")" : "");
  if (stored && measured_with(*stored, settings)) {
    log.info("loaded the scale-attention calibration " + path + ", made with the settings this run asks (" +
             std::to_string(settings.classes.size()) + " classes, CFG " + format_text("%g", settings.cfg) + ")");
    slot = stored;
    return slot;
  }
  if (stored)
    log.info("the scale-attention calibration " + path + " was measured on " + std::to_string(stored->classes.size()) +
             " classes at CFG " + format_text("%g", stored->cfg) + ", seed " + std::to_string(stored->seed) +
             "; measuring one on the " + what + ", first use");
  else
    log.warn("model " + model.name + " has no scale-attention calibration (" + std::string(kScaleAttentionProfileFile) +
             "): measuring one on the " + what +
             " now; 'kvstudio-cli calibrate --policy heatkv --model DIR' stores one");
  ScaleParams params;  // as `calibrate` measures: the default sampler
  params.seed = settings.seed;
  params.cfg = settings.cfg;
  slot = std::make_shared<const ScaleAttentionProfile>(
      calibrate_scale_attention(model, settings.classes, params, ctx.cancelled));
  return slot;
}

std::shared_ptr<const AmsKvCalibration> stored_amskv_calibration(const std::string& bundle_dir) {
  if (bundle_dir.empty()) return nullptr;
  const std::string path = bundle_dir + "/" + kAmsKvCalibrationFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  auto calibration = std::make_shared<const AmsKvCalibration>(AmsKvCalibration::load(path));
  module_logger("session").info("loaded the AMS-KV calibration " + path + ": theta " +
                                std::to_string(calibration->theta.theta));
  return calibration;
}

GenerationResult run_scale_generation(const VarModel& model, VarCalibrations& calibrations,
                                      const GenerationRequest& request, const RunContext& ctx) {
  const VarConfig& config = model.transformer->config();
  check_class_ids(request, config.num_classes, model.name);
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("cfg interval applies to raster models only (VAR ramps its guidance over the scales)");
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());

  ScaleParams params;
  params.cfg = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = request.seed;
  const bool use_cfg = params.cfg != 0.0;

  scale::ScaleRun run;
  run.model_name = model.name;
  run.family = "var";
  run.shape = scale_shape(config, batch, use_cfg);
  run.images = batch;
  run.grid_height = run.grid_width = config.final_grid();
  for (const int64_t side : config.patch_nums) run.scale_grids.push_back({side, side});
  run.policy_context = scale_policy_context(config, batch, use_cfg, request.seed);
  // A policy that needs a calibration asks for it while it is made, also on a
  // policy change mid-run (HeatKV with another calibration_images, say).
  run.policy_context.calibrations = std::make_shared<VarCalibrationProvider>(model, calibrations, request, ctx);
  run.decode = [&](const at::Tensor& f_hat) { return decode_fhat(model, f_hat); };

  const auto network = class_conditioned_var(*model.transformer, *model.vqvae, at::tensor(request.class_ids), params);
  return scale::stream_scales(*network, run, request, ctx);
}

}  // namespace kvs::var
