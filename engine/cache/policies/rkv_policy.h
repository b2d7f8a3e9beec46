#pragma once
// `rkv` — R-KV (Cai et al., "R-KV: Redundancy-aware KV Cache Compression for
// Reasoning Models", 2025, §3), the redundancy-aware baseline of LineAR §4.2 and
// HeadKV §5.2. At each line end, per layer and (row, KV head), the candidates with
// the lowest Z = lambda * I - (1 - lambda) * R go until the segment holds B - n:
// I is SnapKV's observation-window importance normalised over the candidates, R
// the mean cosine similarity of a key to the segment's other image keys,
// softmax-normalised over the candidates. The buffer is one line (as in LineAR
// §3.3), not R-KV's 128 tokens, which exceed the image budgets.
// Choices where the paper is silent: docs/policies.md#rkv
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/snapkv_policy.h"

namespace kvs {

class RkvPolicy : public CachePolicy {
 public:
  RkvPolicy(const PolicyContext& context, int64_t budget_tokens, double lambda, int64_t window, int64_t kernel,
            bool decide_on_both);
  std::string name() const override { return "rkv"; }
  int64_t budget_tokens() const override { return budget_; }
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  void after_token(KvStore& store, int64_t token_index) override;

 private:
  PolicyContext context_;
  int64_t budget_, kernel_;
  double lambda_;
  bool decide_on_both_;
  ObservationWindow window_;
};

// Mean cosine similarity of every slot's key to the other image keys of its segment,
// [rows, kv_heads, L] float on the store's device (0 where a segment has a single
// image entry). is_image: bool [rows, kv_heads, L] CPU.
at::Tensor key_redundancy(const KvStore& store, int64_t layer, const at::Tensor& is_image);

PolicyInfo rkv_policy_info();

}  // namespace kvs
