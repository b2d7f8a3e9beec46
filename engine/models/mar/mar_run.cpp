#include "engine/models/mar/mar_run.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/generation/masked/masked_stream.h"
#include "engine/models/mar/lazymar_policy.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/masked_generation.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::mar {
namespace {

std::vector<RgbImage> decode_tokens(const MarModel& model, const at::Tensor& tokens) {
  return to_rgb_images(mar_images_to_uint8_nhwc(model.decode_tokens(tokens)));
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
  StepAttention(const GenerationRequest& request, const MarConfig& config) : request_(request), config_(config) {
    observer_.on_qkv = [this](MarStack stack, int64_t layer, const MarBlockQkv& qkv) {
      if (stack != MarStack::Decoder) return;
      if (request_.attention_layer >= 0 && layer != request_.attention_layer) return;
      // Image 0's conditional row: [heads, buffer + seq_len, head_dim].
      layers_.push_back({layer, qkv.q[0].detach().clone(), qkv.k[0].detach().clone()});
    };
  }
  const MarBlockObserver* observer() const { return &observer_; }

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
      at::Tensor probs = at::softmax(at::matmul(q, s.k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1))),
                                     -1, at::kFloat);
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
  const MarConfig& config_;
  MarBlockObserver observer_;
  std::vector<Seen> layers_;
};

}  // namespace

GenerationResult run_masked_generation(const MarModel& model, const GenerationRequest& request, const RunContext& ctx) {
  const MarConfig& config = model.config();
  check_class_ids(request, config.class_num, model.name);
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("cfg interval applies to raster models only (MAR ramps its guidance over the steps)");
  MarFlopCounter flops;
  // "full": the exact recomputation; "lazymar:...": LazyMAR's feature caches. Others are refused with the list.
  const std::unique_ptr<LazyMarCache> feature_cache = make_masked_feature_cache(request.policy, config, &flops,
                                                                                request.seed);
  if (request.attention_layer < -1 || request.attention_layer >= config.decoder_depth)
    throw InvalidArgumentError("attention layer " + std::to_string(request.attention_layer) +
                               " does not exist (MAR's decoder has " + std::to_string(config.decoder_depth) +
                               " blocks; -1 = mean)");
  if (request.attention_head < -1 || request.attention_head >= config.decoder_num_heads)
    throw InvalidArgumentError("attention head " + std::to_string(request.attention_head) +
                               " does not exist (MAR's decoder has " + std::to_string(config.decoder_num_heads) +
                               " heads; -1 = mean)");
  if (request.sampling.top_k != 0 || request.sampling.top_p != 1.0 || !request.sampling.sample)
    throw InvalidArgumentError(
        "top-k, top-p and greedy apply to token models; MAR samples continuous tokens with its "
        "diffusion head (use --temperature)");

  MaskedParams params;
  params.num_iter = request.steps > 0 ? request.steps : 64;
  params.cfg = request.cfg_scale;
  params.cfg_schedule = request.cfg_schedule.empty() ? "linear" : request.cfg_schedule;
  params.temperature = request.sampling.temperature;
  params.validate();

  const int64_t grid = config.seq_h(), seq_len = config.seq_len();
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());
  MaskedHooks hooks;
  hooks.cancelled = ctx.cancelled;
  hooks.feature_cache = feature_cache.get();
  hooks.flops = &flops;
  std::optional<StepAttention> attention;
  if (request.emit_attention_map) {
    attention.emplace(request, config);
    hooks.observer = attention->observer();
    if (feature_cache) feature_cache->set_decoder_observer(attention->observer());
  }

  masked::MaskedRun run;
  run.model_name = model.name;
  run.family = "mar";
  run.shape = masked_shape(model, batch, params);
  run.grid_height = run.grid_width = grid;
  run.decode = [&](const at::Tensor& tokens) { return decode_tokens(model, tokens); };
  run.describe_unit = [&](UnitDoneEvent& unit, const MaskedStep& step) {
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
  };
  // A masked model's feature caches are built over the run's steps (LazyMAR's
  // schedule counts from the first step), so a switch asked for mid-run is
  // checked and then refused: it applies from the next generation.
  run.refuse_change = [&](const std::string& spec) {
    MarFlopCounter scratch;
    make_masked_feature_cache(spec, config, &scratch, request.seed);  // an invalid spec says what is wrong
    throw InvalidArgumentError("a masked (MAR) model keeps its feature cache for the whole run: '" + spec +
                               "' applies from the next generation");
  };
  SeededMarRandom rng(request.seed);
  const auto network = class_conditioned_mar(model, at::tensor(request.class_ids), params, rng, hooks);
  masked::MaskedResult generated;
  GenerationResult result = masked::stream_masked(*network, run, request, ctx, &generated);
  // MAR's tokens are continuous latents: report each image's generation order instead.
  result.tokens = token_rows(generated.orders);
  result.flops = batch > 0 ? flops.total / static_cast<double>(batch) : 0;
  return result;
}

}  // namespace kvs::mar
