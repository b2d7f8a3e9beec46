#include "engine/models/janus/janus_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <optional>

#include "engine/core/errors.h"
#include "engine/sampling/token_record.h"
#include "engine/sampling/token_sampler.h"

namespace kvs::janus {

PolicyContext prompt_policy_context(const JanusConfig& config, int64_t prompt_tokens, int64_t batch, bool cfg,
                                    uint64_t seed) {
  const LanguageConfig& l = config.language;
  PolicyContext context;
  context.n_layer = l.num_hidden_layers;
  context.n_head = l.num_attention_heads;
  context.kv_heads = l.num_key_value_heads;
  context.head_dim = l.head_dim();
  context.grid_height = config.grid_size();
  context.grid_width = config.grid_size();
  context.condition_tokens = prompt_tokens;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  return context;
}

llamagen::RasterResult generate_from_prompt(const JanusModel& model, const at::Tensor& cond_in,
                                            const at::Tensor& uncond_in, int64_t images, const PromptParams& params,
                                            const llamagen::RasterHooks& hooks) {
  const JanusConfig& config = model.config;
  const JanusLanguageModel& lm = *model.language;
  params.sampling.validate();
  if (images <= 0) throw InvalidArgumentError("generation needs at least one image");
  at::Tensor cond = cond_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t prompt_len = cond.size(0);
  const int64_t n_tokens = config.image_tokens();
  if (prompt_len < 1) throw InvalidArgumentError("the prompt has no tokens");
  if (prompt_len + n_tokens > config.language.max_position_embeddings)
    throw InvalidArgumentError("the prompt is " + std::to_string(prompt_len) + " tokens: with " +
                               std::to_string(n_tokens) + " image tokens the model's context of " +
                               std::to_string(config.language.max_position_embeddings) + " positions holds at most " +
                               std::to_string(config.language.max_position_embeddings - n_tokens) + " prompt tokens");
  if (cond.min().item<int64_t>() < 0 || cond.max().item<int64_t>() >= config.language.vocab_size)
    throw InvalidArgumentError("prompt token id out of range [0, " + std::to_string(config.language.vocab_size) + ")");
  const bool use_cfg = params.cfg_weight > 1.0;
  at::Tensor rows = cond.unsqueeze(0).expand({images, prompt_len});
  if (use_cfg) {
    at::Tensor uncond = uncond_in.to(at::kCPU, at::kLong).reshape({-1});
    if (uncond.size(0) != prompt_len)
      throw InvalidArgumentError("the unconditional prompt has " + std::to_string(uncond.size(0)) +
                                 " tokens, the prompt " + std::to_string(prompt_len) +
                                 ": CFG rows must keep equal positions");
    rows = at::cat({rows, uncond.unsqueeze(0).expand({images, prompt_len})});
  }
  const int64_t capacity = hooks.cache_capacity_tokens > 0 ? std::min(hooks.cache_capacity_tokens, n_tokens) : n_tokens;
  KvStore cache = lm.make_cache(rows.size(0), prompt_len + capacity);
  // Policies decide at line ends: a segment needs room for at most one line more
  // than it keeps (engine/cache/kv_store.h).
  cache.set_unit_headroom(config.grid_size());
  auto active_policy = [&]() -> CachePolicy* { return hooks.policy ? hooks.policy() : nullptr; };
  TokenSampler sampler(params.seed);
  llamagen::RasterResult result;
  result.tokens = at::zeros({images, n_tokens}, at::TensorOptions().dtype(at::kLong));
  auto check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };
  std::optional<TokenRecord> record_tokens;
  auto finish_step = [&](int64_t step, at::Tensor logits) {
    if (use_cfg) logits = combine_cfg(logits, params.cfg_weight);
    if (static_cast<int64_t>(result.step_logits.size()) < hooks.record_logits_steps)
      result.step_logits.push_back((logits / params.sampling.temperature).to(at::kCPU).clone());
    at::Tensor next;
    if (params.choose) {
      at::Tensor probs = at::softmax(logits.to(at::kCPU) / params.sampling.temperature, -1);
      next = params.choose(step, probs).to(at::kLong).reshape({-1});
    } else {
      next = sampler.sample(logits, params.sampling);
    }
    // Tokens drawn on a GPU stay there; the host copy follows once per line.
    if (!record_tokens) record_tokens.emplace(result.tokens, next.device(), config.grid_size());
    record_tokens->put(step, next);
    return next;
  };

  check_cancel();
  at::Tensor hidden = lm.forward(lm.embed_text(rows), 0, &cache);
  at::Tensor next = finish_step(0, model.image_logits(hidden.select(1, prompt_len - 1)));
  if (hooks.on_token) hooks.on_token(1, record_tokens->host(1), cache);

  for (int64_t i = 0; i < n_tokens - 1; ++i) {
    check_cancel();
    at::Tensor ids = use_cfg ? at::cat({next, next}) : next;
    CachePolicy* policy = active_policy();
    const StepObserver observer = llamagen::step_observer(policy, hooks, i);
    hidden = lm.forward(model.image_embeds(ids.view({-1, 1})), prompt_len + i, &cache, observer);
    // Token i's K/V is now in every layer: the policy may evict (line ends, or per token).
    if (policy != nullptr) policy->after_token(cache, i);
    next = finish_step(i + 1, model.image_logits(hidden.select(1, 0)));
    if (hooks.on_token) hooks.on_token(i + 2, record_tokens->host(i + 2), cache);
  }
  record_tokens->host(n_tokens);
  result.memory = cache.memory();
  return result;
}

at::Tensor janus_images_to_uint8_nhwc(const at::Tensor& images) {
  at::Tensor x = at::clamp((images.to(at::kCPU, at::kFloat) + 1) / 2 * 255, 0, 255);
  return x.to(at::kByte).permute({0, 2, 3, 1}).contiguous();
}

}  // namespace kvs::janus
