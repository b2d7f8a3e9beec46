#include "engine/generation/raster/raster_loop.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <optional>

#include "engine/core/errors.h"
#include "engine/sampling/token_record.h"
#include "engine/sampling/token_sampler.h"

namespace kvs::raster {

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

RasterResult generate(RasterNetwork& network, const RasterShape& shape, const RasterParams& params,
                      const RasterHooks& hooks) {
  params.sampling.validate();
  const int64_t batch = shape.images, n_tokens = shape.image_tokens;
  if (batch <= 0) throw InvalidArgumentError("generation needs at least one image");
  if (n_tokens <= 0 || shape.line_tokens <= 0 || n_tokens % shape.line_tokens != 0)
    throw InvalidArgumentError("raster generation: " + std::to_string(n_tokens) +
                               " image tokens are not whole lines of " + std::to_string(shape.line_tokens));
  const bool use_cfg = params.cfg_scale > 1.0;
  const int64_t given = params.given_tokens.defined() ? params.given_tokens.size(-1) : 0;
  if (params.given_tokens.defined() &&
      (params.given_tokens.dim() != 2 || params.given_tokens.size(0) != batch || given <= 0 || given >= n_tokens))
    throw InvalidArgumentError("raster generation: given tokens " + c10::str(params.given_tokens.sizes()) +
                               " must be [" + std::to_string(batch) + ", n] with 0 < n < " + std::to_string(n_tokens));
  const at::Tensor given_tokens = given > 0 ? params.given_tokens.to(at::kCPU, at::kLong) : at::Tensor();
  const int64_t capacity = hooks.cache_capacity_tokens > 0 ? std::min(hooks.cache_capacity_tokens, n_tokens) : n_tokens;
  KvStore cache = network.make_cache(use_cfg ? 2 * batch : batch, shape.condition_tokens + capacity);
  // Policies decide at line ends: a segment needs room for at most one line more
  // than it keeps, so the store fits segments to that (engine/cache/kv_store.h).
  cache.set_unit_headroom(shape.line_tokens);
  auto active_policy = [&]() -> CachePolicy* { return hooks.policy ? hooks.policy() : nullptr; };
  TokenSampler sampler(params.seed);
  RasterResult result;
  result.tokens = at::zeros({batch, n_tokens}, at::TensorOptions().dtype(at::kLong));
  auto check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };
  // Tokens drawn on a GPU stay there (the next step's input); the host copy is
  // brought up to date once per line, so a line waits for the device once.
  std::optional<TokenRecord> record_tokens;
  auto choose_token = [&](int64_t step, at::Tensor logits, bool cfg_active) {
    if (cfg_active) logits = combine_cfg(logits, params.cfg_scale);
    logits = network.constrain(step, logits);
    if (static_cast<int64_t>(result.step_logits.size()) < hooks.record_logits_steps)
      result.step_logits.push_back(logits.to(at::kCPU).clone());
    at::Tensor next = step < given    ? given_tokens.select(1, step).to(logits.device())
                      : params.choose ? params.choose(step, logits).to(logits.device(), at::kLong).reshape({-1})
                                      : sampler.sample(logits, params.sampling);
    if (!record_tokens) record_tokens.emplace(result.tokens, next.device(), shape.line_tokens);
    record_tokens->put(step, next);
    return next;
  };

  check_cancel();
  at::Tensor next = choose_token(0, network.prefill(cache), use_cfg);
  if (hooks.on_token) hooks.on_token(1, record_tokens->host(1), cache);

  bool cfg_active = use_cfg;
  for (int64_t i = 0; i < n_tokens - 1; ++i) {
    check_cancel();
    if (cfg_active && params.cfg_interval > -1 && i > params.cfg_interval) {
      cfg_active = false;
      cache.keep_rows(0, batch);
    }
    CachePolicy* policy = active_policy();
    const StepObserver observer = step_observer(policy, hooks, i);
    at::Tensor logits = network.decode_step(cfg_active ? at::cat({next, next}) : next, shape.condition_tokens + i,
                                            cache, observer);
    // Token i's K/V is now in every layer: the policy may evict (line ends, or per token).
    if (policy != nullptr) policy->after_token(cache, i);
    next = choose_token(i + 1, logits, cfg_active);
    if (hooks.on_token) hooks.on_token(i + 2, record_tokens->host(i + 2), cache);
  }
  record_tokens->host(n_tokens);
  result.decode_steps = n_tokens - 1;
  result.graph_steps = network.graph_steps();
  result.memory = cache.memory();
  return result;
}

}  // namespace kvs::raster
