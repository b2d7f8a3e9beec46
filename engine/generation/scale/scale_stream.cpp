#include "engine/generation/scale/scale_stream.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::scale {
namespace {

bool serves_scales(const std::string& name) {
  try {
    const auto& families = find_policy(name).families;
    return std::find(families.begin(), families.end(), "scale") != families.end();
  } catch (const InvalidArgumentError&) {
    return false;  // an unknown name: make_policy's message lists the known ones
  }
}

}  // namespace

std::unique_ptr<CachePolicy> make_scale_policy(const PolicySpec& spec, const PolicyContext& context) {
  const std::string note =
      "works on raster (next-token) models only; this model generates scale by scale and takes "
      "'full' or a scale policy";
  std::unique_ptr<CachePolicy> policy;
  try {
    policy = make_policy(spec, context);
  } catch (const InvalidArgumentError& e) {
    const std::string& name = spec.name;
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

GenerationResult stream_scales(ScaleNetwork& network, const ScaleRun& run, const GenerationRequest& request,
                               const RunContext& ctx) {
  const ScaleShape& shape = run.shape;
  check_attention_selection(request, run.policy_context.n_layer, run.policy_context.kv_heads);
  const int64_t scales = static_cast<int64_t>(shape.scale_tokens.size()), total = shape.total_tokens();
  StartedEvent started{run.model_name,
                       ctx.device_description,
                       run.images,
                       run.grid_height,
                       run.grid_width,
                       total,
                       "scale",
                       scales,
                       run.family,
                       0,
                       {},
                       {},
                       {}};
  if (static_cast<int64_t>(run.scale_grids.size()) != scales)
    throw InvalidArgumentError("a next-scale run names " + std::to_string(run.scale_grids.size()) +
                               " scale grids for " + std::to_string(scales) + " scales");
  for (const auto& [height, width] : run.scale_grids) {
    started.unit_heights.push_back(height);
    started.unit_widths.push_back(width);
  }
  started.condition_labels = run.condition_labels;
  ctx.emit(started);

  // A policy that needs a calibration asks for it while it is made (through
  // the context's provider), also on a policy change mid-run.
  auto make = [&](const PolicySpec& spec) { return make_scale_policy(spec, run.policy_context); };
  std::unique_ptr<CachePolicy> policy = make(request.policy);
  // A calibration made on the way (first use) is not counted in the run's time.
  RunClock clock;
  std::string policy_spec = request.policy.text();
  ScaleHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  hooks.cache_capacity_tokens = policy->initial_entries();
  hooks.cancelled = ctx.cancelled;

  // Attention of each scale's queries (image 0), averaged over the queries and
  // the layers and heads asked for, per sequence position.
  CacheAttentionMap attention(request, total);
  at::Tensor text_attention;  // the current scale's, summed over layers
  if (request.emit_attention_map) {
    hooks.wants_attention = [](int64_t) { return true; };
    hooks.on_attention = [&](int64_t layer, int64_t si, const KvAttention& a, const KvStore& store) {
      const double queries = static_cast<double>(shape.scale_tokens[static_cast<size_t>(si)]);
      at::Tensor mass = a.key_mass[0].to(at::kCPU, at::kFloat) / queries;  // [heads, L]
      attention.add(layer, shape.scale_begin(si), mass, store.positions_tensor(layer)[0].narrow(1, 0, mass.size(1)));
    };
    // A text cross-attention: image 0's mass per text token, summed over the
    // layers asked for (all, or attention_layer), averaged over the heads.
    if (!run.condition_labels.empty())
      hooks.on_text_attention = [&](int64_t layer, int64_t, const at::Tensor& text_mass) {
        if (request.attention_layer >= 0 && layer != request.attention_layer) return;
        text_attention = text_attention.defined() ? text_attention + text_mass : text_mass.clone();
      };
  }
  hooks.on_scale = [&](const ScaleStep& step) {
    ctx.emit(clock.progress(step.tokens_done, total));
    UnitDoneEvent unit = clock.unit(step.scale, scales);
    fill_kv_unit(unit, *step.cache, request, total, policy_spec, ctx.cuda_index, policy.get());
    if (request.emit_attention_map) unit.attention = attention.take();
    if (text_attention.defined()) {
      // Shares of the labelled tokens (the mass over the whole text is 1 per query).
      const at::Tensor shares = text_attention.to(at::kFloat).contiguous();
      const double sum = shares.sum().item<double>();
      const float* p = shares.data_ptr<float>();
      const auto n = std::min<int64_t>(shares.numel(), static_cast<int64_t>(run.condition_labels.size()));
      unit.condition_attention.assign(p, p + n);
      if (sum > 0)
        for (float& v : unit.condition_attention) v = static_cast<float>(v / sum);
      text_attention = at::Tensor();
    }
    // f_hat already spans the whole image: decode it as it stands.
    clock.preview_if_due(unit, request, [&] { return run.decode(*step.f_hat); });
    ctx.emit(unit);
    // A change requested so far takes effect for the next scale.
    apply_policy_change(ctx, step.scale, policy_spec,
                        [&](const std::string& spec) { policy = make(parse_policy_spec(spec)); });
  };
  const ScaleResult generated = generate(network, shape, hooks);

  GenerationResult result = clock.result(run.model_name, ctx, run.grid_width, total);
  result.grid_height = run.grid_height;
  result.images = run.decode(generated.f_hat);
  result.tokens = token_rows(generated.tokens());
  fill_kv_result(result, generated.memory);
  result.policy = policy_spec;
  result.elapsed_ms = clock.elapsed_ms();
  return result;
}

}  // namespace kvs::scale
