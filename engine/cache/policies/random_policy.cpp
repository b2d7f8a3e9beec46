#include "engine/cache/policies/random_policy.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace kvs {

RandomPolicy::RandomPolicy(const PolicyContext& context, int64_t budget_tokens)
    : context_(context), budget_(budget_tokens), generator_(at::detail::createCPUGenerator(context.seed ^ 0x5eed)) {
  if (budget_ <= context.grid_width)
    throw InvalidArgumentError("policy random: budget " + std::to_string(budget_) +
                               " tokens is impossible: it must exceed one line (" + std::to_string(context.grid_width) +
                               " tokens), the buffer refilled between evictions");
}

void RandomPolicy::after_token(KvStore& store, int64_t token_index) {
  if ((token_index + 1) % context_.grid_width != 0) return;
  const int64_t target = budget_ - context_.grid_width;
  for (int64_t layer = 0; layer < store.n_layer(); ++layer) {
    ImageSlots s = image_slots(store, layer, context_.condition_tokens);
    if (s.count.max().item<int64_t>() < budget_) continue;
    const int64_t rows = decision_rows(store, context_);
    at::Tensor candidates = s.is_image.narrow(0, 0, rows);
    at::Tensor score = at::rand({rows, store.kv_heads(), s.length}, generator_, at::kFloat);
    at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, rows) - target, 0);
    apply_keep(store, layer, keep_all_but_lowest(score, candidates, evict), context_);
  }
}

PolicyInfo random_policy_info() {
  return {{"random",
           "uniformly random eviction down to B - n at each line end",
           "baseline in LineAR §4",
           budget_param_specs("1/4"),
           // Budgets and decisions count token lines: raster models only (VAR refuses them, supports_units()).
           {"raster"}},
          [](const PolicyParams& p, const PolicyContext& c) {
            return std::make_unique<RandomPolicy>(c, resolve_budget_tokens(p, c, "random"));
          }};
}

}  // namespace kvs
