#include "engine/generation/raster/raster_stream.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <memory>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::raster {

at::Tensor given_rows(const RasterRun& run, const GenerationRequest& request) {
  if (!request.finishes_picture()) return {};
  if (!run.encode)
    throw InvalidArgumentError("model " + run.model_name +
                               " cannot read a picture: its bundle ships no VQ encoder (files.vq_encoder)");
  if (request.keep_rows >= run.grid_height)
    throw InvalidArgumentError("keeping " + std::to_string(request.keep_rows) + " rows leaves nothing to draw: " +
                               run.model_name + "'s images have " + std::to_string(run.grid_height) +
                               " token rows, so keep 1 to " + std::to_string(run.grid_height - 1));
  const at::Tensor codes = run.encode(read_png(request.from_image).image).to(at::kCPU, at::kLong).reshape({-1});
  if (codes.numel() != run.grid_height * run.grid_width)
    throw ModelMismatchError("the encoder gave " + std::to_string(codes.numel()) + " codes for a " +
                             std::to_string(run.grid_height) + "x" + std::to_string(run.grid_width) + " token grid");
  return codes.narrow(0, 0, request.keep_rows * run.grid_width)
      .unsqueeze(0)
      .expand({run.shape.images, -1})
      .contiguous();
}

GenerationResult stream_raster(RasterNetwork& network, const RasterRun& run, const GenerationRequest& request,
                               const RunContext& ctx, RasterResult* raster_out) {
  const RasterShape& shape = run.shape;
  check_attention_selection(request, run.policy_context.n_layer, run.policy_context.kv_heads);
  const int64_t batch = shape.images, n_tokens = shape.image_tokens, line = shape.line_tokens;
  const int64_t units = n_tokens / line;
  const int64_t total_positions = shape.condition_tokens + n_tokens;
  RasterParams params = run.params;
  params.given_tokens = given_rows(run, request);
  ctx.emit(StartedEvent{run.model_name,
                        ctx.device_description,
                        batch,
                        run.grid_height,
                        run.grid_width,
                        n_tokens,
                        "line",
                        units,
                        run.family,
                        shape.condition_tokens,
                        run.condition_labels,
                        {},
                        {},
                        request.finishes_picture() ? request.keep_rows : 0});

  RunClock clock;
  std::unique_ptr<CachePolicy> policy = make_policy(request.policy, run.policy_context);
  std::string policy_spec = request.policy.text();
  RasterHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  // The attention of the step that generates each line's last token (its query
  // is the token before), accumulated over the layers and heads asked for;
  // paid only when requested.
  CacheAttentionMap attention(request, total_positions);
  if (request.emit_attention_map) {
    hooks.wants_attention = [line](int64_t i) { return (i + 2) % line == 0; };
    hooks.on_attention = [&](int64_t layer, int64_t i, const KvAttention& a, const KvStore& store) {
      at::Tensor mass = a.key_mass[0].to(at::kCPU, at::kFloat) /
                        static_cast<double>(run.query_heads_per_kv_head);  // [kv, L]: mean over grouped heads
      attention.add(layer, shape.condition_tokens + i, mass,
                    store.positions_tensor(layer)[0].narrow(1, 0, mass.size(1)));
    };
  }
  hooks.cache_capacity_tokens = policy->initial_entries();
  hooks.cancelled = ctx.cancelled;
  hooks.on_token = [&](int64_t done, const at::Tensor& tokens, const KvStore& cache) {
    ctx.emit(clock.progress(done, n_tokens));
    if (done % line != 0) return;
    UnitDoneEvent unit = clock.unit(done / line - 1, units);
    fill_kv_unit(unit, cache, request, total_positions, policy_spec, ctx.cuda_index, policy.get());
    if (request.emit_attention_map) unit.attention = attention.take();
    clock.preview_if_due(unit, request, [&] {
      // The decoders see the whole grid: rows not generated yet get code 0.
      at::Tensor codes = at::zeros({batch, n_tokens}, at::TensorOptions().dtype(at::kLong));
      codes.narrow(1, 0, done).copy_(tokens);
      return run.decode(codes);
    });
    ctx.emit(unit);
    // A change requested so far (also from a listener of this very event)
    // takes effect for the next line: the new policy adopts the cache as is.
    apply_policy_change(ctx, unit.unit_index, policy_spec, [&](const std::string& spec) {
      policy = make_policy(parse_policy_spec(spec), run.policy_context);
    });
  };
  RasterResult raster = generate(network, shape, params, hooks);

  GenerationResult result = clock.result(run.model_name, ctx, run.grid_width, n_tokens);
  result.grid_height = run.grid_height;
  result.images = run.decode(raster.tokens);
  result.tokens = token_rows(raster.tokens);
  fill_kv_result(result, raster.memory);
  result.policy = policy_spec;
  result.elapsed_ms = clock.elapsed_ms();
  if (raster_out) *raster_out = std::move(raster);
  return result;
}

}  // namespace kvs::raster
