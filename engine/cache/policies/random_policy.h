#pragma once
// `random`: the random-eviction baseline of the LineAR paper (§4.2, Table 3).
// Same cadence and budget as LineAR: once a segment holds B image entries, each
// line end cuts it to B - n by evicting uniformly random image entries, drawn
// from a generator seeded by the request's seed and shared by a CFG pair.
// Choices where the paper is silent: docs/policies.md#random
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
