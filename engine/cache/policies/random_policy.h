#pragma once
// `random`: the random-eviction baseline of the LineAR paper (§4, Table 1).
//
// Choices where the paper is silent:
// - Same cadence and budget as LineAR: no eviction until a segment holds B image
//   entries; then at the end of each line the segment is cut to B - n (n = line
//   width) by evicting uniformly random image entries, so it never exceeds B.
// - Draws come from a generator seeded by the request's seed (reproducible), are
//   independent per layer and head, and shared by the two halves of a CFG pair.
// - The condition token is never evicted.
#include <ATen/core/Generator.h>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class RandomPolicy : public CachePolicy {
 public:
  RandomPolicy(const PolicyContext& context, int64_t budget_tokens);
  std::string name() const override { return "random"; }
  int64_t budget_tokens() const override { return budget_; }
  void after_token(KvStore& store, int64_t token_index) override;

 private:
  PolicyContext context_;
  int64_t budget_;
  at::Generator generator_;
};

PolicyInfo random_policy_info();

}  // namespace kvs
