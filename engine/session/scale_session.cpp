#include "engine/session/scale_session.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/logging.h"
#include "engine/core/errors.h"
#include "engine/models/var/scale_generation.h"
#include "engine/models/var/var_family.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_model.h"
#include "engine/session/event_snapshots.h"

namespace kvs {
namespace {

void emit(EventSink* sink, const GenerationEvent& e) {
  if (sink) sink->on_event(e);
}

std::vector<RgbImage> decode_fhat(const var::VarModel& model, const at::Tensor& f_hat) {
  return to_rgb_images(var::var_images_to_uint8_nhwc(model.vqvae->fhat_to_img(f_hat)));
}

// VAR runs with `full` or a policy written for scale units (cache_policy.h).
// A raster policy may already refuse the scale context while it is built (its
// budget rules count token lines); the note says why either way.
std::unique_ptr<CachePolicy> make_scale_policy(const std::string& spec, const PolicyContext& context) {
  const std::string note = "works on raster (next-token) models only; this VAR model takes 'full' or a scale policy";
  std::unique_ptr<CachePolicy> policy;
  try {
    policy = make_policy(spec, context);
  } catch (const InvalidArgumentError& e) {
    const std::string name = parse_policy_spec(spec).name;
    if (name == "full") throw;
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

// Policies that rank heads from a calibration of the model (HeatKV).
bool needs_scale_profile(const std::string& spec) {
  try {
    return parse_policy_spec(spec).name == "heatkv";
  } catch (const InvalidArgumentError&) {
    return false;  // make_scale_policy reports the spec's problem
  }
}

// The model's calibration: the session's, the bundle's file, or a fresh one on a
// few classes (kept in the session for later runs).
std::shared_ptr<const ScaleAttentionProfile> scale_profile_for(const ScaleSessionContext& ctx) {
  if (ctx.scale_profile == nullptr) return nullptr;
  if (*ctx.scale_profile) return *ctx.scale_profile;
  auto log = module_logger("session");
  const std::string path = ctx.bundle_dir + "/" + kScaleAttentionProfileFile;
  std::error_code ec;
  if (!ctx.bundle_dir.empty() && std::filesystem::exists(path, ec)) {
    *ctx.scale_profile = std::make_shared<const ScaleAttentionProfile>(ScaleAttentionProfile::load(path));
    log.info("loaded the scale-attention calibration " + path);
    return *ctx.scale_profile;
  }
  const var::VarModel& model = *ctx.model;
  const std::vector<int64_t> classes = var::spread_classes(model.transformer->config().num_classes, 2);
  log.warn("model " + model.name + " has no scale-attention calibration (" + std::string(kScaleAttentionProfileFile) +
           "): calibrating on 2 classes now; 'kvstudio-cli calibrate --policy heatkv --model DIR' stores one");
  var::ScaleParams params;
  params.cfg = ctx.request->cfg_scale;
  params.sampling = ctx.request->sampling;
  params.seed = 0;
  *ctx.scale_profile =
      std::make_shared<const ScaleAttentionProfile>(var::calibrate_scale_attention(model, classes, params, ctx.cancelled));
  return *ctx.scale_profile;
}

}  // namespace

GenerationResult run_scale_generation(const ScaleSessionContext& ctx) {
  const var::VarModel& model = *ctx.model;
  const GenerationRequest& request = *ctx.request;
  const var::VarConfig& config = model.transformer->config();
  for (int64_t c : request.class_ids)
    if (c >= config.num_classes)
      throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: model " + model.name + " has " +
                                 std::to_string(config.num_classes) + " classes (0.." +
                                 std::to_string(config.num_classes - 1) + ")");
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("cfg interval applies to raster models only (VAR ramps its guidance over the scales)");
  if (request.attention_layer < -1 || request.attention_layer >= config.depth)
    throw InvalidArgumentError("attention layer " + std::to_string(request.attention_layer) + " does not exist (model has " +
                               std::to_string(config.depth) + " layers; -1 = mean)");
  if (request.attention_head < -1 || request.attention_head >= config.num_heads)
    throw InvalidArgumentError("attention head " + std::to_string(request.attention_head) + " does not exist (model has " +
                               std::to_string(config.num_heads) + " KV heads; -1 = mean)");

  const int64_t grid = config.final_grid(), scales = config.scales(), total = config.total_tokens();
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());
  emit(ctx.sink, StartedEvent{model.name, ctx.device_description, batch, grid, grid, total, "scale", scales,
                                 var::var_description().name});

  var::ScaleParams params;
  params.cfg = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = request.seed;

  PolicyContext context = var::scale_policy_context(config, batch, params.cfg != 0.0, request.seed);
  auto context_for = [&](const std::string& spec) {
    if (needs_scale_profile(spec) && !context.scale_profile) context.scale_profile = scale_profile_for(ctx);
    return context;
  };
  std::unique_ptr<CachePolicy> policy = make_scale_policy(request.policy, context_for(request.policy));
  // A calibration made on the way (HeatKV, first use) is not counted in the run's time.
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  std::string policy_spec = request.policy;
  var::ScaleHooks hooks;
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

  double preview_ms = 0;
  hooks.on_scale = [&](const var::ScaleStep& step) {
    const double ms = elapsed_ms();
    emit(ctx.sink, TokenProgressEvent{step.tokens_done, total, ms, ms > 0 ? step.tokens_done * 1000.0 / ms : 0});
    const KvStore& cache = *step.cache;
    UnitDoneEvent unit;
    unit.unit_index = step.scale;
    unit.units_total = scales;
    unit.elapsed_ms = ms;
    fill_kv_unit(unit, cache, request, total, policy_spec, ctx.cuda_index, policy.get());
    if (request.emit_attention_map) unit.attention = attention.take();
    if (preview_due(request, step.scale, scales, preview_ms, ms)) {
      // f_hat already spans the whole image: decode it as it stands.
      const double decode_start = elapsed_ms();
      unit.preview = decode_fhat(model, *step.f_hat);
      preview_ms += elapsed_ms() - decode_start;
    }
    emit(ctx.sink, unit);
    // A change requested so far takes effect for the next scale.
    std::optional<std::string> change = ctx.take_policy_change ? ctx.take_policy_change() : std::nullopt;
    if (change) {
      try {
        policy = make_scale_policy(*change, context_for(*change));
        policy_spec = *change;
        emit(ctx.sink, PolicyChangedEvent{step.scale, policy_spec, true, ""});
      } catch (const Error& e) {
        emit(ctx.sink, PolicyChangedEvent{step.scale, policy_spec, false, e.what()});
      }
    }
  };
  const var::ScaleResult generated =
      var::generate_scales(*model.transformer, *model.vqvae, at::tensor(request.class_ids), params, hooks);

  GenerationResult result;
  result.model_name = model.name;
  result.device = ctx.device_description;
  result.grid_height = grid;
  result.grid_width = grid;
  const double gen_ms = elapsed_ms();
  result.tokens_per_second = gen_ms > 0 ? total * 1000.0 / gen_ms : 0;
  result.images = decode_fhat(model, generated.f_hat);
  at::Tensor tokens32 = generated.tokens().to(at::kInt).contiguous();
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t* p = tokens32[i].data_ptr<int32_t>();
    result.tokens.emplace_back(p, p + total);
  }
  result.kv_bytes_peak = generated.memory.bytes_peak;
  result.kv_bytes_logical_final = generated.memory.bytes_logical;
  result.kv_bytes_full = generated.memory.bytes_full_equivalent;
  result.policy = policy_spec;
  result.elapsed_ms = elapsed_ms();
  emit(ctx.sink, FinishedEvent{result.elapsed_ms});
  return result;
}

}  // namespace kvs
