#include "engine/generation/scale/scale_loop.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <numeric>

#include "engine/core/errors.h"

namespace kvs::scale {
namespace {

// The observer of scale si: the active policy's unit hooks and the hooks'
// attention probe, each only when asked for (key mass costs a little), and the
// cancellation check before every layer. `hooks` must outlive the scale.
ScaleObserver scale_observer(CachePolicy* policy, const ScaleHooks& hooks, int64_t si,
                             const std::function<void()>& check_cancel) {
  ScaleObserver observer;
  observer.before_layer = [check_cancel](int64_t) { check_cancel(); };
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
    observer.on_attention = [&hooks, policy, si, policy_attention, probe_attention](int64_t layer, const KvAttention& a,
                                                                                    const KvStore& store) {
      if (policy_attention)
        policy->observe_unit_attention(layer, si, a.key_mass,
                                       store.positions_tensor(layer).narrow(2, 0, a.key_mass.size(-1)));
      if (probe_attention) hooks.on_attention(layer, si, a, store);
    };
  }
  if (hooks.wants_attention && hooks.on_text_attention && hooks.wants_attention(si))
    observer.on_text_attention = [&hooks, si](int64_t layer, const at::Tensor& text_mass) {
      hooks.on_text_attention(layer, si, text_mass);
    };
  if (policy != nullptr) {
    observer.before_attention = [policy, si](int64_t layer, KvStore& store) {
      policy->before_unit_attention(store, layer, si);
    };
    observer.after_layer = [policy, si](int64_t layer, KvStore& store) { policy->after_unit_layer(store, layer, si); };
  }
  return observer;
}

}  // namespace

int64_t ScaleShape::total_tokens() const {
  return std::accumulate(scale_tokens.begin(), scale_tokens.end(), int64_t{0});
}

int64_t ScaleShape::scale_begin(int64_t si) const {
  return std::accumulate(scale_tokens.begin(), scale_tokens.begin() + si, int64_t{0});
}

at::Tensor ScaleResult::tokens() const {
  if (ids.empty()) return at::zeros({0, 0}, at::TensorOptions().dtype(at::kLong));
  return at::cat(ids, 1);
}

ScaleResult generate(ScaleNetwork& network, const ScaleShape& shape, const ScaleHooks& hooks) {
  const int64_t scales = static_cast<int64_t>(shape.scale_tokens.size()), total = shape.total_tokens();
  if (scales == 0) throw InvalidArgumentError("next-scale generation needs at least one scale");
  // No headroom: a layer's segments grow to exactly the scale being appended and
  // shrink to exactly what the policy keeps. A scale is appended once per layer,
  // so the repack this costs is one copy of what the layer keeps — small beside
  // the attention over the same entries — and in exchange no segment holds empty
  // room for later scales (up to 256 slots at VAR's last one, which HeatKV drops
  // as soon as its own layer has attended). A cache that keeps everything (no
  // policy, or one declaring the whole sequence) is sized for it once instead;
  // any other starts at the first scale and grows as it needs.
  const bool keeps_everything = hooks.cache_capacity_tokens <= 0 || hooks.cache_capacity_tokens >= total;
  KvStore cache = network.make_cache(shape.rows, keeps_everything ? total : shape.scale_tokens[0]);
  cache.set_unit_headroom(0);
  auto active_policy = [&]() -> CachePolicy* { return hooks.policy ? hooks.policy() : nullptr; };
  const std::function<void()> check_cancel = [&] {
    if (hooks.cancelled && hooks.cancelled()) throw CancelledError();
  };

  ScaleResult result;
  int64_t tokens_done = 0;
  for (int64_t si = 0; si < scales; ++si) {
    check_cancel();
    CachePolicy* policy = active_policy();
    const ScaleObserver observer = scale_observer(policy, hooks, si, check_cancel);
    const at::Tensor logits = network.forward_scale(si, cache, observer);
    if (policy != nullptr) policy->after_unit(cache, si);
    const at::Tensor guided = network.guide(si, logits);
    if (static_cast<int64_t>(result.scale_logits.size()) < hooks.record_logits_scales)
      result.scale_logits.push_back(guided.to(at::kCPU).clone());
    result.ids.push_back(network.take(si, guided));
    tokens_done += shape.scale_tokens[static_cast<size_t>(si)];
    if (hooks.on_scale) {
      ScaleStep step;
      step.scale = si;
      step.scales_total = scales;
      step.tokens_done = tokens_done;
      step.tokens_total = total;
      step.ids = &result.ids.back();
      step.f_hat = &network.f_hat();
      step.cache = &cache;
      hooks.on_scale(step);
    }
  }
  result.f_hat = network.f_hat();
  result.memory = cache.memory();
  return result;
}

}  // namespace kvs::scale
