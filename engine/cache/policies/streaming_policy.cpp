#include "engine/cache/policies/streaming_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

#include <algorithm>

namespace kvs {

StreamingPolicy::StreamingPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t sink_tokens,
                                 int64_t sink_scales)
    : context_(context), budget_(budget_tokens), sink_(sink_tokens) {
  if (sink_ < 0) throw InvalidArgumentError("policy streaming: sink must be >= 0");
  if (!context.unit_tokens.empty()) {
    const auto scales = static_cast<int64_t>(context.unit_tokens.size());
    if (sink_scales < 0 || sink_scales >= scales)
      throw InvalidArgumentError("policy streaming: sink_scales " + std::to_string(sink_scales) +
                                 " is impossible (0.." + std::to_string(scales - 1) + " for " + std::to_string(scales) +
                                 " scales)");
    sink_ = context.unit_begin(sink_scales);
  }
  if (budget_ <= sink_)
    throw InvalidArgumentError("policy streaming: budget " + std::to_string(budget_) +
                               " tokens is impossible: it must exceed the " + std::to_string(sink_) + " sink tokens");
}

int64_t StreamingPolicy::max_entries() const {
  // Raster: the new token arrives before after_token evicts the oldest one; VAR: a
  // whole scale arrives before after_unit_layer cuts.
  if (context_.unit_tokens.empty()) return budget_ + 1;
  return std::min(context_.image_tokens(), budget_ + context_.unit_tokens.back());
}

void StreamingPolicy::after_token(KvStore& store, int64_t) {
  for (int64_t layer = 0; layer < store.n_layer(); ++layer) cut(store, layer);
}

void StreamingPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t) { cut(store, layer); }

void StreamingPolicy::cut(KvStore& store, int64_t layer) {
  ImageSlots s = image_slots(store, layer, context_.condition_tokens);
  if (s.count.max().item<int64_t>() <= budget_) return;
  const int64_t rows = decision_rows(store, context_);
  at::Tensor rank = s.rank.narrow(0, 0, rows), count = s.count.narrow(0, 0, rows).unsqueeze(-1);
  at::Tensor keep = ~s.is_image.narrow(0, 0, rows) | (rank < sink_) | (rank >= count - (budget_ - sink_));
  apply_keep(store, layer, keep, context_);
}

std::vector<CacheRegion> StreamingPolicy::regions(int64_t positions) const {
  const int64_t cond = context_.condition_tokens;
  const int64_t done = std::clamp<int64_t>(positions - cond, 0, context_.image_tokens());
  const int64_t sinks_end = std::min(sink_, done);
  const int64_t window_begin = std::max(sink_, done - (budget_ - sink_));
  std::vector<CacheRegion> out;
  if (sinks_end > 0) out.push_back({"sinks", "sinks", cond, cond + sinks_end});
  if (done > window_begin) out.push_back({"window", "recent window", cond + window_begin, cond + done});
  return out;
}

PolicyInfo streaming_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back(integer_param("sink", "4", 0, 4096,
                                 "first image tokens kept as attention sinks (the condition token is always kept)"));
  params.push_back(
      integer_param("sink_scales", "3", 0, 1e6, "VAR models: first scales kept as attention sinks (replaces sink)"));
  return {{"streaming", "StreamingLLM: attention sinks + a window of the most recent tokens",
           "Xiao et al. 2023 (StreamingLLM), baseline in LineAR §4 / HeadKV §5", params},
          [](const PolicyParams& p, const PolicyContext& c) {
            return std::make_unique<StreamingPolicy>(c, resolve_budget_tokens(p, c, "streaming"), p.integer("sink"),
                                                     p.integer("sink_scales"));
          }};
}

}  // namespace kvs
