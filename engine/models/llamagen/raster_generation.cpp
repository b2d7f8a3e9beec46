#include "engine/models/llamagen/raster_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/models/llamagen/decode_graphs.h"
#include "engine/sampling/token_record.h"
#include "engine/sampling/token_sampler.h"

namespace kvs::llamagen {

PolicyContext raster_policy_context(const GptConfig& config, int64_t batch, bool cfg, uint64_t seed) {
  PolicyContext context;
  context.n_layer = config.n_layer;
  context.n_head = config.n_head;
  context.kv_heads = config.kv_heads();
  context.head_dim = config.head_dim();
  context.grid_height = config.grid_size();
  context.grid_width = config.grid_size();
  context.condition_tokens = config.cls_token_num;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  return context;
}

StepObserver step_observer(CachePolicy* policy, const RasterHooks& hooks, int64_t i) {
  StepObserver observer;
  if (policy != nullptr && policy->wants_queries())
    observer.on_queries = [policy, i](int64_t layer, const at::Tensor& q) { policy->observe_queries(layer, i, q); };
  const bool policy_attention = policy != nullptr && policy->wants_key_mass();
  const bool probe_attention = hooks.wants_attention && hooks.on_attention && hooks.wants_attention(i);
  if (policy_attention || probe_attention) {
    observer.want_key_mass = true;
    observer.on_attention = [&hooks, policy, i, policy_attention, probe_attention](int64_t layer, const KvAttention& a,
                                                                                   const KvStore& store) {
      if (policy_attention)
        policy->observe_attention(layer, i, a.key_mass,
                                  store.positions_tensor(layer).narrow(2, 0, a.key_mass.size(-1)));
      if (probe_attention) hooks.on_attention(layer, i, a, store);
    };
  }
  return observer;
}

RasterResult generate_raster(const LlamaGenGpt& gpt, const at::Tensor& labels_in, const RasterParams& params,
                             const RasterHooks& hooks) {
  const GptConfig& config = gpt.config();
  params.sampling.validate();
  at::Tensor labels = labels_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t batch = labels.size(0);
  if (batch <= 0) throw InvalidArgumentError("generation needs at least one class label");
  if (labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= config.num_classes)
    throw InvalidArgumentError("class label out of range [0, " + std::to_string(config.num_classes) + ")");
  const bool use_cfg = params.cfg_scale > 1.0;
  if (use_cfg && !config.has_null_class())
    throw InvalidArgumentError("this model has no null class (class_dropout_prob = 0), so CFG > 1 is impossible");

  const int64_t n_tokens = config.block_size;
  at::Tensor cond = use_cfg ? at::cat({labels, at::full({batch}, config.null_class(), labels.options())}) : labels;
  const int64_t capacity = hooks.cache_capacity_tokens > 0 ? std::min(hooks.cache_capacity_tokens, n_tokens) : n_tokens;
  KvStore cache = gpt.make_cache(cond.size(0), config.cls_token_num + capacity);
  // Policies decide at line ends: a segment needs room for at most one line more
  // than it keeps, so the store fits segments to that (engine/cache/kv_store.h).
  cache.set_unit_headroom(config.grid_size());
  auto active_policy = [&]() -> CachePolicy* { return hooks.policy ? hooks.policy() : nullptr; };
  TokenSampler sampler(params.seed);
  RasterResult result;
  result.tokens = at::zeros({batch, n_tokens}, at::TensorOptions().dtype(at::kLong));
  auto check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };
  auto record = [&](const at::Tensor& logits) {
    if (static_cast<int64_t>(result.step_logits.size()) < hooks.record_logits_steps)
      result.step_logits.push_back(logits.to(at::kCPU).clone());
  };

  check_cancel();
  at::Tensor logits = gpt.prefill(cond, cache);
  if (use_cfg) logits = combine_cfg(logits, params.cfg_scale);
  record(logits);
  at::Tensor next = sampler.sample(logits, params.sampling);
  // Tokens drawn on a GPU stay there (the next step's input); the host copy is
  // brought up to date once per image line, so a line waits for the device once.
  TokenRecord record_tokens(result.tokens, next.device(), config.grid_size());
  record_tokens.put(0, next);
  if (hooks.on_token) hooks.on_token(1, record_tokens.host(1), cache);

  bool cfg_active = use_cfg;
  for (int64_t i = 0; i < n_tokens - 1; ++i) {
    check_cancel();
    if (cfg_active && params.cfg_interval > -1 && i > params.cfg_interval) {
      cfg_active = false;
      cache.keep_rows(0, batch);
    }
    at::Tensor x = cfg_active ? at::cat({next, next}) : next;
    CachePolicy* policy = active_policy();
    const StepObserver observer = step_observer(policy, hooks, i);
    const int64_t position = config.cls_token_num + i;
    logits = params.decode_graphs ? params.decode_graphs->step(x, position, cache, observer) : at::Tensor();
    if (logits.defined()) ++result.graph_steps;
    else logits = gpt.decode_step(x, position, cache, observer);
    // Token i's K/V is now in every layer: the policy may evict (line ends, or per token).
    if (policy != nullptr) policy->after_token(cache, i);
    if (cfg_active) logits = combine_cfg(logits, params.cfg_scale);
    record(logits);
    next = sampler.sample(logits, params.sampling);
    record_tokens.put(i + 1, next);
    if (hooks.on_token) hooks.on_token(i + 2, record_tokens.host(i + 2), cache);
  }
  record_tokens.host(n_tokens);
  result.decode_steps = n_tokens - 1;
  result.memory = cache.memory();
  return result;
}

}  // namespace kvs::llamagen
