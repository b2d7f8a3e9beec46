#pragma once
// `full`: the uncompressed cache (the reference every policy is compared with).
#include "engine/cache/policies/policy_registry.h"

namespace kvs {

class FullPolicy : public CachePolicy {
 public:
  explicit FullPolicy(const PolicyContext& context) : tokens_(context.image_tokens()) {}
  std::string name() const override { return "full"; }
  int64_t budget_tokens() const override { return tokens_; }
  void after_token(KvStore&, int64_t) override {}

 private:
  int64_t tokens_;
};

PolicyInfo full_policy_info();

}  // namespace kvs
