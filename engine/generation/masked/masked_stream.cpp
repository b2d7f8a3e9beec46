#include "engine/generation/masked/masked_stream.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/session/event_snapshots.h"

namespace kvs::masked {

GenerationResult stream_masked(MaskedNetwork& network, const MaskedRun& run, const GenerationRequest& request,
                               const RunContext& ctx, MaskedResult* generated_out) {
  const MaskedShape& shape = run.shape;
  const int64_t seq_len = shape.seq_len;
  ctx.emit(StartedEvent{run.model_name,
                        ctx.device_description,
                        shape.images,
                        run.grid_height,
                        run.grid_width,
                        seq_len,
                        "step",
                        shape.num_iter,
                        run.family,
                        0,
                        {},
                        {},
                        {}});

  RunClock clock;
  const std::string policy = request.policy.text();
  int64_t unknown_before = seq_len;
  MaskedLoopHooks hooks;
  hooks.cancelled = ctx.cancelled;
  hooks.on_step = [&](const MaskedStep& step) {
    ctx.emit(clock.progress(step.tokens_done, seq_len));
    UnitDoneEvent unit = clock.unit(step.step, step.steps_total);
    unit.policy = policy;
    fill_unit_memory(unit, ctx.cuda_index);
    // The positions of image 0 predicted now: its order entries [unknown after, unknown before).
    const int64_t unknown_after = seq_len - step.tokens_done;
    at::Tensor positions =
        (*step.orders)[0].narrow(0, unknown_after, unknown_before - unknown_after).to(at::kCPU, at::kInt).contiguous();
    unit.predicted_positions.assign(positions.data_ptr<int32_t>(), positions.data_ptr<int32_t>() + positions.numel());
    unknown_before = unknown_after;
    if (run.describe_unit) run.describe_unit(unit, step);
    clock.preview_if_due(unit, request, [&] { return run.decode(*step.tokens); });
    ctx.emit(unit);
    std::string active = policy;
    apply_policy_change(ctx, step.step, active, [&](const std::string& spec) {
      if (spec == policy) return;  // already active
      if (run.refuse_change) run.refuse_change(spec);
    });
  };
  MaskedResult generated = generate(network, shape, hooks);

  GenerationResult result = clock.result(run.model_name, ctx, run.grid_width, seq_len);
  result.grid_height = run.grid_height;
  result.images = run.decode(generated.tokens);
  result.policy = policy;
  result.elapsed_ms = clock.elapsed_ms();
  if (generated_out) *generated_out = std::move(generated);
  return result;
}

}  // namespace kvs::masked
