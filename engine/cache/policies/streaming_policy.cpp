#include "engine/cache/policies/streaming_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace kvs {

StreamingPolicy::StreamingPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t sink_tokens)
    : context_(context), budget_(budget_tokens), sink_(sink_tokens) {
  if (sink_ < 0) throw InvalidArgumentError("policy streaming: sink must be >= 0");
  if (budget_ <= sink_)
    throw InvalidArgumentError("policy streaming: budget " + std::to_string(budget_) + " tokens is impossible: it must exceed the " +
                               std::to_string(sink_) + " sink tokens");
}

void StreamingPolicy::after_token(KvStore& store, int64_t) {
  for (int64_t layer = 0; layer < store.n_layer(); ++layer) {
    ImageSlots s = image_slots(store, layer, context_.condition_tokens);
    if (s.count.max().item<int64_t>() <= budget_) continue;
    const int64_t rows = decision_rows(store, context_);
    at::Tensor rank = s.rank.narrow(0, 0, rows), count = s.count.narrow(0, 0, rows).unsqueeze(-1);
    at::Tensor keep = ~s.is_image.narrow(0, 0, rows) | (rank < sink_) | (rank >= count - (budget_ - sink_));
    apply_keep(store, layer, keep, context_);
  }
}

PolicyInfo streaming_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back({"sink", ParamType::Integer, "4", "first image tokens kept as attention sinks (the condition token is always kept)", {}});
  return {"streaming", "StreamingLLM: attention sinks + a window of the most recent tokens",
          "Xiao et al. 2023 (StreamingLLM), baseline in LineAR §4 / HeadKV §5", params,
          [](const PolicyParams& p, const PolicyContext& c) {
            return std::make_unique<StreamingPolicy>(c, resolve_budget_tokens(p, c, "streaming"), p.integer("sink"));
          }};
}

}  // namespace kvs
