#include "engine/models/var/scale_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/sampling/scale_sampler.h"

namespace kvs::var {

at::Tensor ScaleResult::tokens() const {
  if (ids.empty()) return at::zeros({0, 0}, at::TensorOptions().dtype(at::kLong));
  return at::cat(ids, 1);
}

PolicyContext scale_policy_context(const VarConfig& config, int64_t batch, bool cfg, uint64_t seed) {
  PolicyContext context;
  context.n_layer = config.depth;
  context.n_head = config.num_heads;
  context.kv_heads = config.num_heads;
  context.head_dim = config.head_dim();
  context.grid_height = config.final_grid();
  context.grid_width = config.final_grid();
  context.condition_tokens = 0;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  for (int64_t si = 0; si < config.scales(); ++si) context.unit_tokens.push_back(config.scale_tokens(si));
  return context;
}

ScaleResult generate_scales(const VarTransformer& transformer, const MultiScaleVqvae& vqvae,
                            const at::Tensor& labels_in, const ScaleParams& params, const ScaleHooks& hooks) {
  const VarConfig& config = transformer.config();
  check_compatible(config, vqvae.config());
  params.sampling.validate();
  if (!(params.cfg >= 0)) throw InvalidArgumentError("VAR cfg must be >= 0 (0 = no guidance)");
  at::Tensor labels = labels_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t batch = labels.size(0);
  if (batch <= 0) throw InvalidArgumentError("generation needs at least one class label");
  if (labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= config.num_classes)
    throw InvalidArgumentError("class label out of range [0, " + std::to_string(config.num_classes) + ")");

  const bool use_cfg = params.cfg != 0.0;
  const int64_t scales = config.scales(), total = config.total_tokens();
  at::Tensor cond_labels = use_cfg ? at::cat({labels, at::full({batch}, config.null_class(), labels.options())})
                                   : labels;
  const VarCondition condition = transformer.condition(cond_labels);
  // No headroom: a layer's segments grow to exactly the scale being appended and
  // shrink to exactly what the policy keeps. A scale is appended once per layer,
  // so the repack this costs is one copy of what the layer keeps — small beside
  // the attention over the same entries — and in exchange no segment holds empty
  // room for later scales (up to 256 slots at the last one, which HeatKV drops as
  // soon as its own layer has attended). A cache that keeps everything (no policy,
  // or one declaring the whole sequence) is sized for it once instead; any other
  // starts at the first scale and grows as it needs.
  const bool keeps_everything = hooks.cache_capacity_tokens <= 0 || hooks.cache_capacity_tokens >= total;
  KvStore cache = transformer.make_cache(cond_labels.size(0), keeps_everything ? total : config.scale_tokens(0));
  cache.set_unit_headroom(0);
  auto active_policy = [&]() -> CachePolicy* { return hooks.policy ? hooks.policy() : nullptr; };
  auto check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };

  ScaleSampler sampler(params.seed);
  ScaleResult result;
  at::Tensor f_hat = vqvae.empty_fhat(batch);
  at::Tensor x = transformer.first_scale_input(condition);
  int64_t tokens_done = 0;
  for (int64_t si = 0; si < scales; ++si) {
    check_cancel();
    CachePolicy* policy = active_policy();
    ScaleObserver observer;
    observer.before_layer = [&](int64_t) { check_cancel(); };
    if (policy != nullptr && policy->wants_unit_keys())
      observer.on_keys = [policy, si](int64_t layer, const at::Tensor& keys) {
        policy->observe_unit_keys(layer, si, keys);
      };
    if (policy != nullptr && policy->wants_queries())
      observer.on_queries = [policy, si](int64_t layer, const at::Tensor& queries) {
        policy->observe_queries(layer, si, queries);
      };
    const bool policy_attention = policy != nullptr && policy->wants_key_mass();
    const bool probe_attention = hooks.wants_attention && hooks.on_attention && hooks.wants_attention(si);
    if (policy_attention || probe_attention) {
      observer.want_key_mass = true;
      observer.on_attention = [&, policy, si, policy_attention, probe_attention](int64_t layer, const KvAttention& a,
                                                                                 const KvStore& store) {
        if (policy_attention)
          policy->observe_unit_attention(layer, si, a.key_mass,
                                         store.positions_tensor(layer).narrow(2, 0, a.key_mass.size(-1)));
        if (probe_attention) hooks.on_attention(layer, si, a, store);
      };
    }
    if (policy != nullptr) {
      observer.before_attention = [policy, si](int64_t layer, KvStore& store) {
        policy->before_unit_attention(store, layer, si);
      };
      observer.after_layer = [policy, si](int64_t layer, KvStore& store) {
        policy->after_unit_layer(store, layer, si);
      };
    }

    at::Tensor logits = transformer.forward_scale(x, condition, si, cache, observer);
    if (policy != nullptr) policy->after_unit(cache, si);
    if (use_cfg) {
      // ratio = si / num_stages_minus_1; t = cfg * ratio; (1 + t) * cond - t * uncond
      const double ratio = scales > 1 ? static_cast<double>(si) / static_cast<double>(scales - 1) : 0.0;
      const double t = params.cfg * ratio;
      logits = logits.narrow(0, 0, batch) * (1.0 + t) - logits.narrow(0, batch, batch) * t;
    }
    if (static_cast<int64_t>(result.scale_logits.size()) < hooks.record_logits_scales)
      result.scale_logits.push_back(logits.to(at::kCPU).clone());
    at::Tensor ids = sampler.sample(logits, params.sampling);
    result.ids.push_back(ids);
    vqvae.accumulate(f_hat, vqvae.embed_scale(ids, si), si);
    if (si + 1 < scales) {
      x = transformer.scale_input(vqvae.next_scale_input(f_hat, si), si + 1);
      if (use_cfg) x = x.repeat({2, 1, 1});
    }
    tokens_done += config.scale_tokens(si);
    if (hooks.on_scale) {
      ScaleStep step;
      step.scale = si;
      step.scales_total = scales;
      step.patch_num = config.patch_nums[static_cast<size_t>(si)];
      step.tokens_done = tokens_done;
      step.tokens_total = total;
      step.ids = &result.ids.back();
      step.f_hat = &f_hat;
      step.cache = &cache;
      hooks.on_scale(step);
    }
  }
  result.f_hat = f_hat;
  result.memory = cache.memory();
  return result;
}

}  // namespace kvs::var
