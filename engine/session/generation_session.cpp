#include "engine/session/generation_session.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <chrono>
#include <map>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/model_bundle.h"
#include "engine/models/llamagen/llamagen_family.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/raster_generation.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/var/var_model.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/masked_session.h"
#include "engine/session/scale_session.h"

namespace kvs {
namespace {

std::vector<RgbImage> decode_images(const llamagen::LlamaGenModel& model, const at::Tensor& codes) {
  const int64_t grid = model.gpt->config().grid_size();
  return to_rgb_images(llamagen::images_to_uint8_nhwc(model.vq->decode_codes(codes, grid, grid)));
}

void emit(EventSink* sink, const GenerationEvent& e) {
  if (sink) sink->on_event(e);
}

}  // namespace

struct GenerationSession::Impl {
  std::string loaded_key;
  std::string family;             // of the loaded model: "llamagen" | "var" | "mar"
  llamagen::LlamaGenModel model;
  var::VarModel var_model;
  std::shared_ptr<const ScaleAttentionProfile> var_profile;  // HeatKV's calibration, once needed
  mar::MarModel mar_model;
};

GenerationSession::GenerationSession() : impl_(std::make_unique<Impl>()) {}
GenerationSession::~GenerationSession() = default;

GenerationResult GenerationSession::run(const GenerationRequest& request, EventSink* sink) {
  cancel_requested_ = false;
  {
    // Changes asked for before this run are stale; those asked for once it has
    // begun (even before its StartedEvent reaches a listener) apply to it.
    std::lock_guard<std::mutex> lock(pending_mutex_);
    pending_policy_.reset();
  }
  auto log = module_logger("session");
  try {
    request.validate();
    const DeviceChoice device = choose_device(parse_device_kind(request.device), request.threads);
    const at::Device torch_device = device.kind == DeviceKind::Cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    const int cuda_index = device.kind == DeviceKind::Cuda ? 0 : -1;
    const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
    const std::string key = bundle.dir + "@" + device.description;
    if (impl_->loaded_key != key) {
      const std::string family = bundle.family();
      if (family != "llamagen" && family != "var" && family != "mar")
        throw InvalidArgumentError("model family '" + family + "' is not supported yet (supported: llamagen, var, mar)");
      impl_->loaded_key.clear();
      impl_->model = llamagen::LlamaGenModel{};
      impl_->var_model = var::VarModel{};
      impl_->var_profile.reset();
      impl_->mar_model = mar::MarModel{};
      if (family == "var") impl_->var_model = var::VarModel::load(bundle, torch_device);
      else if (family == "mar") impl_->mar_model = mar::MarModel::load(bundle, torch_device);
      else impl_->model = llamagen::LlamaGenModel::load(bundle, torch_device);
      impl_->family = family;
      impl_->loaded_key = key;
      log.info("loaded model " + bundle.name() + " on " + device.description);
    }
    reset_device_memory_peak(cuda_index);  // this run's peak (the weights stay counted)
    if (impl_->family == "mar") {
      MaskedSessionContext masked;
      masked.model = &impl_->mar_model;
      masked.request = &request;
      masked.sink = sink;
      masked.device_description = device.description;
      masked.cuda_index = cuda_index;
      masked.cancelled = [this] { return cancel_requested_.load(); };
      return run_masked_generation(masked);
    }
    if (impl_->family == "var") {
      ScaleSessionContext scale;
      scale.model = &impl_->var_model;
      scale.bundle_dir = bundle.dir;
      scale.scale_profile = &impl_->var_profile;
      scale.request = &request;
      scale.sink = sink;
      scale.device_description = device.description;
      scale.cuda_index = cuda_index;
      scale.cancelled = [this] { return cancel_requested_.load(); };
      scale.take_policy_change = [this] {
        std::optional<std::string> change;
        std::lock_guard<std::mutex> lock(pending_mutex_);
        change.swap(pending_policy_);
        return change;
      };
      return run_scale_generation(scale);
    }
    const auto& model = impl_->model;
    const auto& config = model.gpt->config();
    for (int64_t c : request.class_ids)
      if (c >= config.num_classes)
        throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: model " + model.name + " has " +
                                   std::to_string(config.num_classes) + " classes (0.." +
                                   std::to_string(config.num_classes - 1) + ")");

    const int64_t grid = config.grid_size();
    const int64_t batch = static_cast<int64_t>(request.class_ids.size());
    emit(sink, StartedEvent{model.name, device.description, batch, grid, grid, config.block_size, "line", grid,
                            llamagen::llamagen_description().name});

    llamagen::RasterParams params;
    params.cfg_scale = request.cfg_scale;
    params.cfg_interval = request.cfg_interval;
    params.sampling = request.sampling;
    params.seed = request.seed;

    const auto start = std::chrono::steady_clock::now();
    auto elapsed_ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    const PolicyContext context = llamagen::raster_policy_context(config, batch, request.cfg_scale > 1.0, request.seed);
    std::unique_ptr<CachePolicy> policy = make_policy(request.policy, context);
    std::string policy_spec = request.policy;
    llamagen::RasterHooks hooks;
    hooks.policy = [&] { return policy.get(); };
    // Attention map of the step that generates each line's last token (its query
    // is the token before), accumulated over the layers/heads asked for; paid
    // only when requested.
    const int64_t total_positions = config.cls_token_num + config.block_size;
    if (request.attention_layer < -1 || request.attention_layer >= config.n_layer)
      throw InvalidArgumentError("attention layer " + std::to_string(request.attention_layer) + " does not exist (model has " +
                                 std::to_string(config.n_layer) + " layers; -1 = mean)");
    if (request.attention_head < -1 || request.attention_head >= config.kv_heads())
      throw InvalidArgumentError("attention head " + std::to_string(request.attention_head) + " does not exist (model has " +
                                 std::to_string(config.kv_heads()) + " KV heads; -1 = mean)");
    CacheAttentionMap attention(request, total_positions);
    if (request.emit_attention_map) {
      hooks.wants_attention = [grid](int64_t i) { return (i + 2) % grid == 0; };
      hooks.on_attention = [&](int64_t layer, int64_t i, const KvAttention& a, const KvStore& store) {
        const int64_t group = config.n_head / config.kv_heads();
        at::Tensor mass = a.key_mass[0].to(at::kCPU, at::kFloat) / static_cast<double>(group);  // [kv, L]: mean over grouped heads
        attention.add(layer, config.cls_token_num + i, mass, store.positions_tensor(layer)[0].narrow(1, 0, mass.size(1)));
      };
    }
    hooks.cache_capacity_tokens = policy->initial_entries();
    hooks.cancelled = [this] { return cancel_requested_.load(); };
    double preview_ms = 0;  // time spent decoding previews so far
    hooks.on_token = [&](int64_t done, const at::Tensor& tokens, const KvStore& cache) {
      const double ms = elapsed_ms();
      emit(sink, TokenProgressEvent{done, config.block_size, ms, ms > 0 ? done * 1000.0 / ms : 0});
      if (done % grid != 0) return;
      UnitDoneEvent unit;
      unit.unit_index = done / grid - 1;
      unit.units_total = grid;
      unit.elapsed_ms = ms;
      fill_kv_unit(unit, cache, request, total_positions, policy_spec, cuda_index, policy.get());
      if (request.emit_attention_map) unit.attention = attention.take();
      if (preview_due(request, unit.unit_index, grid, preview_ms, ms)) {
        // The decoder has global attention: decode the whole grid with code 0 for
        // rows not generated yet.
        const double decode_start = elapsed_ms();
        at::Tensor codes = at::zeros({batch, config.block_size}, at::TensorOptions().dtype(at::kLong));
        codes.narrow(1, 0, done).copy_(tokens);
        unit.preview = decode_images(model, codes);
        preview_ms += elapsed_ms() - decode_start;
      }
      emit(sink, unit);
      // A change requested so far (also from a listener of this very event)
      // takes effect for the next line: the new policy adopts the cache as is.
      std::optional<std::string> change;
        {
          std::lock_guard<std::mutex> lock(pending_mutex_);
          change.swap(pending_policy_);
        }
        if (change) {
          try {
            policy = make_policy(*change, context);
            policy_spec = *change;
            emit(sink, PolicyChangedEvent{done / grid - 1, policy_spec, true, ""});
          } catch (const Error& e) {
            emit(sink, PolicyChangedEvent{done / grid - 1, policy_spec, false, e.what()});
          }
        }
    };
    llamagen::RasterResult raster = llamagen::generate_raster(*model.gpt, at::tensor(request.class_ids), params, hooks);

    GenerationResult result;
    result.model_name = model.name;
    result.device = device.description;
    result.grid_height = grid;
    result.grid_width = grid;
    const double gen_ms = elapsed_ms();
    result.tokens_per_second = gen_ms > 0 ? config.block_size * 1000.0 / gen_ms : 0;
    result.images = decode_images(model, raster.tokens);
    at::Tensor tokens32 = raster.tokens.to(at::kInt).contiguous();
    for (int64_t i = 0; i < batch; ++i) {
      const int32_t* p = tokens32[i].data_ptr<int32_t>();
      result.tokens.emplace_back(p, p + config.block_size);
    }
    result.kv_bytes_peak = raster.memory.bytes_peak;
    result.kv_bytes_logical_final = raster.memory.bytes_logical;
    result.kv_bytes_full = raster.memory.bytes_full_equivalent;
    result.policy = policy_spec;
    result.elapsed_ms = elapsed_ms();
    emit(sink, FinishedEvent{result.elapsed_ms});
    return result;
  } catch (const CancelledError& e) {
    emit(sink, FailedEvent{e.what(), true});
    throw;
  } catch (const Error& e) {
    emit(sink, FailedEvent{e.what(), false});
    throw;
  } catch (const std::exception& e) {
    // LibTorch errors (c10::Error) carry long backtraces: keep the first line.
    std::string what = e.what();
    const auto nl = what.find('\n');
    if (nl != std::string::npos) what = what.substr(0, nl);
    emit(sink, FailedEvent{"internal error: " + what, false});
    throw Error("internal error: " + what);
  }
}

void GenerationSession::request_policy_change(const std::string& spec) {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  pending_policy_ = spec;
}

}  // namespace kvs
