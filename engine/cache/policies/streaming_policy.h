#pragma once
// `streaming` — StreamingLLM (Xiao et al., "Efficient Streaming Language Models with
// Attention Sinks", 2023), as the LineAR and HeadKV papers use it for images:
// keep the attention sinks plus a window of the most recent tokens.
//
// Choices where the papers are silent:
// - The condition token is always kept and not counted (it is LlamaGen's permanent
//   sink); `sink` further counts the first image tokens kept (default 4, as
//   StreamingLLM's four initial tokens).
// - Evicts after every token (StreamingLLM's per-step rolling window), so each
//   segment holds at most B = sink + window image entries at every step.
// - Next-scale models (VAR; HeatKV §4 runs StreamingLLM this way): the sinks are
//   the first `sink_scales` scales (default 3, HeatKV's s), the window the most
//   recent tokens; after every layer of every scale (its queries have seen the
//   cache and the scale itself) each segment is cut to B = budget tokens, so no
//   segment holds more than B after any layer.
// - Positions are never shifted (LlamaGen caches keys after RoPE): a query keeps
//   its true (row, col) position, unlike the position re-indexing of the LLM paper.
#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class StreamingPolicy : public CachePolicy {
 public:
  // sink_scales replaces sink_tokens on next-scale models (context.unit_tokens set).
  StreamingPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t sink_tokens, int64_t sink_scales = 3);
  std::string name() const override { return "streaming"; }
  int64_t budget_tokens() const override { return budget_; }
  // The new token's entry arrives before after_token evicts the oldest one.
  int64_t max_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return !context_.unit_tokens.empty(); }
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;
  int64_t sink_tokens() const { return sink_; }
  // "sinks" (the first sink tokens, or the first sink_scales scales) and
  // "window" (the most recent B - sink tokens).
  std::vector<CacheRegion> regions(int64_t positions) const override;

 private:
  void cut(KvStore& store, int64_t layer);

  PolicyContext context_;
  int64_t budget_, sink_;
};

PolicyInfo streaming_policy_info();

}  // namespace kvs
