#include "engine/session/masked_session.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "engine/cache/policies/lazymar_policy.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/models/mar/mar_family.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/masked_generation.h"
#include "engine/session/event_snapshots.h"

namespace kvs {
namespace {

void emit(EventSink* sink, const GenerationEvent& e) {
  if (sink) sink->on_event(e);
}

std::vector<RgbImage> decode_tokens(const mar::MarModel& model, const at::Tensor& tokens) {
  return to_rgb_images(mar::mar_images_to_uint8_nhwc(model.decode_tokens(tokens)));
}

// The attention map of a step (request.emit_attention_map): the decoder's
// attention of the tokens predicted at this step (image 0, conditional row:
// their queries) over the buffer and the grid, averaged over those queries and
// over the chosen decoder layer / head or all of them (-1). MAR's decoder also
// attends to mask-token placeholders; their weights are dropped and the rest
// renormalised, so the map tells which known tokens (and buffer entries)
// informed the new ones.
class StepAttention {
 public:
  StepAttention(const GenerationRequest& request, const mar::MarConfig& config) : request_(request), config_(config) {
    observer_.on_qkv = [this](mar::MarStack stack, int64_t layer, const mar::MarBlockQkv& qkv) {
      if (stack != mar::MarStack::Decoder) return;
      if (request_.attention_layer >= 0 && layer != request_.attention_layer) return;
      // Image 0's conditional row: [heads, buffer + seq_len, head_dim].
      layers_.push_back({layer, qkv.q[0].detach().clone(), qkv.k[0].detach().clone()});
    };
  }
  const mar::MarBlockObserver* observer() const { return &observer_; }

  // Consumes what the observer saw during this step.
  std::optional<AttentionMap> map(const std::vector<int32_t>& predicted, const at::Tensor& known_before) {
    std::vector<Seen> seen;
    seen.swap(layers_);
    if (predicted.empty() || seen.empty()) return std::nullopt;
    const int64_t buffer = config_.buffer_size, positions = buffer + config_.seq_len();
    std::vector<int64_t> rows;
    for (int32_t p : predicted) rows.push_back(buffer + p);
    const at::Tensor index = at::tensor(rows).to(seen.front().q.device());
    at::Tensor sum;
    for (const Seen& s : seen) {
      const at::Tensor q = s.q.index_select(1, index);  // [heads, new tokens, head_dim]
      at::Tensor probs = at::softmax(at::matmul(q, s.k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1))), -1);
      if (request_.attention_head >= 0) probs = probs.narrow(0, request_.attention_head, 1);
      const at::Tensor mean = probs.mean(at::IntArrayRef{0, 1}).to(at::kCPU, at::kFloat);
      sum = sum.defined() ? sum + mean : mean;
    }
    at::Tensor keep = at::ones({positions}, at::TensorOptions().dtype(at::kBool));
    keep.narrow(0, buffer, config_.seq_len()).copy_(known_before.to(at::kCPU, at::kBool));
    at::Tensor w = at::where(keep, sum, at::zeros_like(sum));
    const double total = w.sum().item<double>();
    if (total > 0) w = w / total;
    w = w.contiguous();
    AttentionMap map;
    map.layer = request_.attention_layer;
    map.head = request_.attention_head;
    map.query_position = rows.front();
    map.positions = positions;
    map.weights.assign(w.data_ptr<float>(), w.data_ptr<float>() + positions);
    return map;
  }

 private:
  struct Seen {
    int64_t layer;
    at::Tensor q, k;
  };
  const GenerationRequest& request_;
  const mar::MarConfig& config_;
  mar::MarBlockObserver observer_;
  std::vector<Seen> layers_;
};

}  // namespace

GenerationResult run_masked_generation(const MaskedSessionContext& ctx) {
  const mar::MarModel& model = *ctx.model;
  const GenerationRequest& request = *ctx.request;
  const mar::MarConfig& config = model.config();
  for (int64_t c : request.class_ids)
    if (c >= config.class_num)
      throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: model " + model.name + " has " +
                                 std::to_string(config.class_num) + " classes (0.." +
                                 std::to_string(config.class_num - 1) + ")");
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("cfg interval applies to raster models only (MAR ramps its guidance over the steps)");
  mar::MarFlopCounter flops;
  // "full": the exact recomputation; "lazymar:...": LazyMAR's feature caches. Others are refused with the list.
  const std::unique_ptr<LazyMarCache> feature_cache = make_masked_feature_cache(request.policy, config, &flops);
  if (request.attention_layer < -1 || request.attention_layer >= config.decoder_depth)
    throw InvalidArgumentError("attention layer " + std::to_string(request.attention_layer) + " does not exist (MAR's decoder has " +
                               std::to_string(config.decoder_depth) + " blocks; -1 = mean)");
  if (request.attention_head < -1 || request.attention_head >= config.decoder_num_heads)
    throw InvalidArgumentError("attention head " + std::to_string(request.attention_head) + " does not exist (MAR's decoder has " +
                               std::to_string(config.decoder_num_heads) + " heads; -1 = mean)");
  if (request.sampling.top_k != 0 || request.sampling.top_p != 1.0 || !request.sampling.sample)
    throw InvalidArgumentError("top-k, top-p and greedy apply to token models; MAR samples continuous tokens with its "
                               "diffusion head (use --temperature)");

  mar::MaskedParams params;
  params.num_iter = request.steps > 0 ? request.steps : 64;
  params.cfg = request.cfg_scale;
  params.cfg_schedule = request.cfg_schedule.empty() ? "linear" : request.cfg_schedule;
  params.temperature = request.sampling.temperature;
  params.validate();

  const int64_t grid = config.seq_h(), seq_len = config.seq_len();
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());
  emit(ctx.sink, StartedEvent{model.name, ctx.device_description, batch, grid, grid, seq_len, "step", params.num_iter,
                                 mar::mar_description().name});

  const auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  double preview_ms = 0;
  int64_t unknown_before = seq_len;
  mar::MaskedHooks hooks;
  hooks.cancelled = ctx.cancelled;
  hooks.feature_cache = feature_cache.get();
  hooks.flops = &flops;
  std::optional<StepAttention> attention;
  if (request.emit_attention_map) {
    attention.emplace(request, config);
    hooks.observer = attention->observer();
    if (feature_cache) feature_cache->set_decoder_observer(attention->observer());
  }
  hooks.on_step = [&](const mar::MaskedStep& step) {
    const double ms = elapsed_ms();
    emit(ctx.sink, TokenProgressEvent{step.tokens_done, seq_len, ms, ms > 0 ? step.tokens_done * 1000.0 / ms : 0});
    UnitDoneEvent unit;
    unit.unit_index = step.step;
    unit.units_total = step.steps_total;
    unit.elapsed_ms = ms;
    unit.policy = request.policy;
    fill_unit_memory(unit, ctx.cuda_index);
    // The positions of image 0 predicted now: its order entries [unknown after, unknown before).
    const int64_t unknown_after = seq_len - step.tokens_done;
    at::Tensor positions =
        (*step.orders)[0].narrow(0, unknown_after, unknown_before - unknown_after).to(at::kCPU, at::kInt).contiguous();
    unit.predicted_positions.assign(positions.data_ptr<int32_t>(), positions.data_ptr<int32_t>() + positions.numel());
    unknown_before = unknown_after;
    if (attention) {
      const at::Tensor known_before = at::logical_and((*step.known)[0], at::logical_not((*step.predicted_mask)[0]));
      unit.attention = attention->map(unit.predicted_positions, known_before);
    }
    unit.flops = batch > 0 ? flops.step / static_cast<double>(batch) : 0;
    if (feature_cache && feature_cache->last_step().recomputed.defined()) {
      const auto& report = feature_cache->last_step();
      at::Tensor r = report.recomputed[0].to(at::kByte).contiguous();
      unit.recomputed.assign(r.data_ptr<uint8_t>(), r.data_ptr<uint8_t>() + r.numel());
      unit.unconditional_computed = report.unconditional_computed;
    } else {
      unit.recomputed.assign(static_cast<size_t>(seq_len), 1);
    }
    if (preview_due(request, step.step, step.steps_total, preview_ms, ms)) {
      const double decode_start = elapsed_ms();
      unit.preview = decode_tokens(model, *step.tokens);
      preview_ms += elapsed_ms() - decode_start;
    }
    emit(ctx.sink, unit);
  };
  mar::SeededMarRandom rng(request.seed);
  const mar::MaskedResult generated = mar::generate_masked(model, at::tensor(request.class_ids), params, rng, hooks);

  GenerationResult result;
  result.model_name = model.name;
  result.device = ctx.device_description;
  result.grid_height = grid;
  result.grid_width = grid;
  const double gen_ms = elapsed_ms();
  result.tokens_per_second = gen_ms > 0 ? seq_len * 1000.0 / gen_ms : 0;
  result.images = decode_tokens(model, generated.tokens);
  // MAR's tokens are continuous latents: report each image's generation order instead.
  at::Tensor order32 = generated.orders.to(at::kCPU, at::kInt).contiguous();
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t* p = order32[i].data_ptr<int32_t>();
    result.tokens.emplace_back(p, p + seq_len);
  }
  result.policy = request.policy;
  result.elapsed_ms = elapsed_ms();
  result.flops = batch > 0 ? flops.total / static_cast<double>(batch) : 0;
  emit(ctx.sink, FinishedEvent{result.elapsed_ms, result.flops});
  return result;
}

}  // namespace kvs
