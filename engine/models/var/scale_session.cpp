#include "engine/models/var/scale_session.h"

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
#include "engine/models/var/hack_calibration.h"
#include "engine/models/var/scale_generation.h"
#include "engine/models/var/scalekv_calibration.h"
#include "engine/models/var/var_calibration.h"
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

bool serves_scales(const std::string& name) {
  try {
    const auto& families = find_policy(name).families;
    return std::find(families.begin(), families.end(), "scale") != families.end();
  } catch (const InvalidArgumentError&) {
    return false;  // an unknown name: make_policy's message lists the known ones
  }
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

std::unique_ptr<CachePolicy> make_scale_policy(const std::string& spec, const PolicyContext& context) {
  const std::string note = "works on raster (next-token) models only; this VAR model takes 'full' or a scale policy";
  std::unique_ptr<CachePolicy> policy;
  try {
    policy = make_policy(spec, context);
  } catch (const InvalidArgumentError& e) {
    const std::string name = parse_policy_spec(spec).name;
    // A scale policy's own message is the whole story (a bad budget, a
    // calibration of another model); only a raster policy gets the note.
    if (name == "full" || serves_scales(name)) throw;
    std::string message = e.what();
    message += " (if policy '";
    message += name;
    message += "' ";
    message += note;
    message += ")";
    throw InvalidArgumentError(message);
  }
  if (policy->name() != "full" && !policy->supports_units()) {
    std::string message = "policy '";
    message += policy->name();
    message += "' ";
    message += note;
    throw InvalidArgumentError(message);
  }
  return policy;
}

GenerationResult run_scale_generation(const VarModel& model, VarCalibrations& calibrations,
                                      const GenerationRequest& request, const RunContext& ctx) {
  const VarConfig& config = model.transformer->config();
  check_class_ids(request, config.num_classes, model.name);
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("cfg interval applies to raster models only (VAR ramps its guidance over the scales)");
  check_attention_selection(request, config.depth, config.num_heads);

  const int64_t grid = config.final_grid(), scales = config.scales(), total = config.total_tokens();
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());
  ctx.emit(StartedEvent{model.name, ctx.device_description, batch, grid, grid, total, "scale", scales, "var", 0, {}});

  ScaleParams params;
  params.cfg = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = request.seed;

  PolicyContext context = scale_policy_context(config, batch, params.cfg != 0.0, request.seed);
  // A policy that needs a calibration asks for it while it is made, also on a
  // policy change mid-run (HeatKV with another calibration_images, say).
  context.calibrations = std::make_shared<VarCalibrationProvider>(model, calibrations, request, ctx);
  auto make = [&](const std::string& spec) { return make_scale_policy(spec, context); };
  std::unique_ptr<CachePolicy> policy = make(request.policy);
  // A calibration made on the way (HeatKV, ScaleKV, HACK, first use) is not counted in the run's time.
  RunClock clock;
  std::string policy_spec = request.policy;
  ScaleHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  hooks.cache_capacity_tokens = policy->initial_entries();
  hooks.cancelled = ctx.cancelled;

  // Attention of each scale's queries (image 0), averaged over the queries and the
  // layers/heads asked for, per sequence position.
  CacheAttentionMap attention(request, total);
  if (request.emit_attention_map) {
    hooks.wants_attention = [](int64_t) { return true; };
    hooks.on_attention = [&](int64_t layer, int64_t si, const KvAttention& a, const KvStore& store) {
      const double queries = static_cast<double>(config.scale_tokens(si));
      at::Tensor mass = a.key_mass[0].to(at::kCPU, at::kFloat) / queries;  // [heads, L]
      attention.add(layer, config.scale_begin(si), mass, store.positions_tensor(layer)[0].narrow(1, 0, mass.size(1)));
    };
  }

  hooks.on_scale = [&](const ScaleStep& step) {
    ctx.emit(clock.progress(step.tokens_done, total));
    UnitDoneEvent unit = clock.unit(step.scale, scales);
    fill_kv_unit(unit, *step.cache, request, total, policy_spec, ctx.cuda_index, policy.get());
    if (request.emit_attention_map) unit.attention = attention.take();
    // f_hat already spans the whole image: decode it as it stands.
    clock.preview_if_due(unit, request, [&] { return decode_fhat(model, *step.f_hat); });
    ctx.emit(unit);
    // A change requested so far takes effect for the next scale.
    apply_policy_change(ctx, step.scale, policy_spec, [&](const std::string& spec) { policy = make(spec); });
  };
  const ScaleResult generated = generate_scales(*model.transformer, *model.vqvae, at::tensor(request.class_ids), params,
                                                hooks);

  GenerationResult result = clock.result(model.name, ctx, grid, total);
  result.images = decode_fhat(model, generated.f_hat);
  result.tokens = token_rows(generated.tokens());
  fill_kv_result(result, generated.memory);
  result.policy = policy_spec;
  result.elapsed_ms = clock.elapsed_ms();
  return result;
}

}  // namespace kvs::var
