#include "engine/models/janus/janus_session.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/models/janus/janus_generation.h"
#include "engine/models/janus/janus_prompt.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::janus {
namespace {

std::vector<RgbImage> decode_images(const JanusModel& model, const at::Tensor& codes) {
  const int64_t grid = model.config.grid_size();
  return to_rgb_images(janus_images_to_uint8_nhwc(model.vq->decode_codes(codes, grid, grid)));
}

}  // namespace

GenerationResult run_prompt_generation(const JanusModel& model, const GenerationRequest& request,
                                       const RunContext& ctx) {
  const JanusConfig& config = model.config;
  const LanguageConfig& l = config.language;
  check_conditioning(request, true, model.name);
  check_attention_selection(request, l.num_hidden_layers, l.num_key_value_heads);
  if (!model.tokenizer) throw ModelMismatchError("model " + model.name + " has no tokenizer");
  const PromptRows prompt = build_prompt_rows(*model.tokenizer, config, request.prompt, request.negative_prompt);
  const int64_t prompt_len = static_cast<int64_t>(prompt.cond.size());
  const int64_t grid = config.grid_size(), n_tokens = config.image_tokens();
  const int64_t batch = request.images;
  const int64_t total_positions = prompt_len + n_tokens;

  StartedEvent started{model.name, ctx.device_description, batch, grid, grid, n_tokens, "line", grid, "janus-pro",
                       prompt_len, prompt.labels};
  ctx.emit(started);

  PromptParams params;
  params.cfg_weight = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = request.seed;

  RunClock clock;
  const PolicyContext context = prompt_policy_context(config, prompt_len, batch, request.cfg_scale > 1.0, request.seed);
  std::unique_ptr<CachePolicy> policy = make_policy(request.policy, context);
  std::string policy_spec = request.policy;
  llamagen::RasterHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  // The attention of the step that generates each line's last token, over the
  // prompt and the image so far (the window shades the prompt's words with it).
  CacheAttentionMap attention(request, total_positions);
  if (request.emit_attention_map) {
    hooks.wants_attention = [grid](int64_t i) { return (i + 2) % grid == 0; };
    hooks.on_attention = [&](int64_t layer, int64_t i, const KvAttention& a, const KvStore& store) {
      const int64_t group = l.num_attention_heads / l.num_key_value_heads;
      at::Tensor mass = a.key_mass[0].to(at::kCPU, at::kFloat) / static_cast<double>(group);
      attention.add(layer, prompt_len + i, mass, store.positions_tensor(layer)[0].narrow(1, 0, mass.size(1)));
    };
  }
  hooks.cache_capacity_tokens = policy->initial_entries();
  hooks.cancelled = ctx.cancelled;
  hooks.on_token = [&](int64_t done, const at::Tensor& tokens, const KvStore& cache) {
    ctx.emit(clock.progress(done, n_tokens));
    if (done % grid != 0) return;
    UnitDoneEvent unit = clock.unit(done / grid - 1, grid);
    fill_kv_unit(unit, cache, request, total_positions, policy_spec, ctx.cuda_index, policy.get());
    if (request.emit_attention_map) unit.attention = attention.take();
    clock.preview_if_due(unit, request, [&] {
      // The decoder sees the whole grid: rows not generated yet get code 0.
      at::Tensor codes = at::zeros({batch, n_tokens}, at::TensorOptions().dtype(at::kLong));
      codes.narrow(1, 0, done).copy_(tokens);
      return decode_images(model, codes);
    });
    ctx.emit(unit);
    apply_policy_change(ctx, unit.unit_index, policy_spec,
                        [&](const std::string& spec) { policy = make_policy(spec, context); });
  };
  const auto raster = generate_from_prompt(model, at::tensor(prompt.cond), at::tensor(prompt.uncond), batch, params,
                                           hooks);

  GenerationResult result = clock.result(model.name, ctx, grid, n_tokens);
  result.images = decode_images(model, raster.tokens);
  result.tokens = token_rows(raster.tokens);
  fill_kv_result(result, raster.memory);
  result.policy = policy_spec;
  result.elapsed_ms = clock.elapsed_ms();
  return result;
}

}  // namespace kvs::janus
