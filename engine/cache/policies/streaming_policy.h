#pragma once
// `streaming` — StreamingLLM (Xiao et al., "Efficient Streaming Language Models with
// Attention Sinks", 2023), as the LineAR (§4) and HeadKV (§5) papers run it on
// images and HeatKV (§4) on next-scale models: keep the attention sinks plus a
// window of the most recent tokens.
// - Raster models: the condition token, the first `sink` image tokens and the
//   newest tokens, cut to B after every token.
// - Next-scale models: the first `sink_scales` scales and the newest tokens, cut
//   to B after every layer of every scale (after_unit_layer), not only between
//   scales; a layer holds B plus the new scale until it has attended.
// - Positions are never shifted (LlamaGen caches keys after RoPE).
// Choices where the paper is silent: docs/policies.md#streaming
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
