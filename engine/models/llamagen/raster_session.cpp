#include "engine/models/llamagen/raster_session.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/errors.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/raster_generation.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::llamagen {
namespace {

std::vector<RgbImage> decode_images(const LlamaGenModel& model, const at::Tensor& codes) {
  const int64_t grid = model.gpt->config().grid_size();
  return to_rgb_images(images_to_uint8_nhwc(model.vq->decode_codes(codes, grid, grid)));
}

}  // namespace

GenerationResult run_raster_generation(const LlamaGenModel& model, const GenerationRequest& request,
                                       const RunContext& ctx) {
  const auto& config = model.gpt->config();
  check_class_ids(request, config.num_classes, model.name);
  check_attention_selection(request, config.n_layer, config.kv_heads());

  const int64_t grid = config.grid_size();
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());
  ctx.emit(StartedEvent{model.name,
                        ctx.device_description,
                        batch,
                        grid,
                        grid,
                        config.block_size,
                        "line",
                        grid,
                        "llamagen",
                        config.cls_token_num,
                        {}});

  RasterParams params;
  params.cfg_scale = request.cfg_scale;
  params.cfg_interval = request.cfg_interval;
  params.sampling = request.sampling;
  params.seed = request.seed;
  const bool graphs_requested = parse_cuda_graphs(request.cuda_graphs) && !cuda_graphs_disabled_by_environment();
  if (graphs_requested) params.decode_graphs = model.decode_graphs.get();

  RunClock clock;
  const PolicyContext context = raster_policy_context(config, batch, request.cfg_scale > 1.0, request.seed);
  std::unique_ptr<CachePolicy> policy = make_policy(request.policy, context);
  std::string policy_spec = request.policy;
  RasterHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  // Attention map of the step that generates each line's last token (its query
  // is the token before), accumulated over the layers/heads asked for; paid
  // only when requested.
  const int64_t total_positions = config.cls_token_num + config.block_size;
  CacheAttentionMap attention(request, total_positions);
  if (request.emit_attention_map) {
    hooks.wants_attention = [grid](int64_t i) { return (i + 2) % grid == 0; };
    hooks.on_attention = [&](int64_t layer, int64_t i, const KvAttention& a, const KvStore& store) {
      const int64_t group = config.n_head / config.kv_heads();
      at::Tensor mass = a.key_mass[0].to(at::kCPU, at::kFloat) /
                        static_cast<double>(group);  // [kv, L]: mean over grouped heads
      attention.add(layer, config.cls_token_num + i, mass, store.positions_tensor(layer)[0].narrow(1, 0, mass.size(1)));
    };
  }
  hooks.cache_capacity_tokens = policy->initial_entries();
  hooks.cancelled = ctx.cancelled;
  hooks.on_token = [&](int64_t done, const at::Tensor& tokens, const KvStore& cache) {
    ctx.emit(clock.progress(done, config.block_size));
    if (done % grid != 0) return;
    UnitDoneEvent unit = clock.unit(done / grid - 1, grid);
    fill_kv_unit(unit, cache, request, total_positions, policy_spec, ctx.cuda_index, policy.get());
    if (request.emit_attention_map) unit.attention = attention.take();
    clock.preview_if_due(unit, request, [&] {
      // The decoder has global attention: decode the whole grid with code 0 for
      // rows not generated yet.
      at::Tensor codes = at::zeros({batch, config.block_size}, at::TensorOptions().dtype(at::kLong));
      codes.narrow(1, 0, done).copy_(tokens);
      return decode_images(model, codes);
    });
    ctx.emit(unit);
    // A change requested so far (also from a listener of this very event)
    // takes effect for the next line: the new policy adopts the cache as is.
    apply_policy_change(ctx, unit.unit_index, policy_spec,
                        [&](const std::string& spec) { policy = make_policy(spec, context); });
  };
  const RasterResult raster = generate_raster(*model.gpt, at::tensor(request.class_ids), params, hooks);

  GenerationResult result = clock.result(model.name, ctx, grid, config.block_size);
  result.images = decode_images(model, raster.tokens);
  result.tokens = token_rows(raster.tokens);
  fill_kv_result(result, raster.memory);
  result.policy = policy_spec;
  result.cuda_graphs = decode_graphs_report(graphs_requested, model.gpt->device().is_cuda(), raster.graph_steps,
                                            raster.decode_steps, model.decode_graphs && model.decode_graphs->failed());
  result.elapsed_ms = clock.elapsed_ms();
  return result;
}

}  // namespace kvs::llamagen
