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
// - Positions are never shifted (LlamaGen caches keys after RoPE): a query keeps
//   its true (row, col) position, unlike the position re-indexing of the LLM paper.
#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class StreamingPolicy : public CachePolicy {
 public:
  StreamingPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t sink_tokens);
  std::string name() const override { return "streaming"; }
  int64_t budget_tokens() const override { return budget_; }
  // The new token's entry arrives before after_token evicts the oldest one.
  int64_t max_entries() const override { return budget_ + 1; }
  void after_token(KvStore& store, int64_t token_index) override;

 private:
  PolicyContext context_;
  int64_t budget_, sink_;
};

PolicyInfo streaming_policy_info();

}  // namespace kvs
