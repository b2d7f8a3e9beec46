#pragma once
// Name -> factory: every policy's description (policy_description.h: typed,
// documented parameters with defaults) and its create function. The CLI, the
// GUI (its policy form is generated from the descriptions) and the benchmarks
// all list and build policies through here. A spec string reads
// "name:key=value,key=value", e.g. "linear:rho=1/6,n_init=4" or "streaming:budget=96".
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/policy_description.h"
#include "engine/cache/policies/policy_spec.h"

namespace kvs {

class PolicyParams {
 public:
  PolicyParams(std::map<std::string, std::string> values, const std::vector<PolicyParamSpec>& specs,
               const std::string& policy);
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;  // Real and Fraction ("1/6" or "0.1667")
  std::string text(const std::string& name) const;
  bool explicitly_set(const std::string& name) const { return set_.count(name) > 0; }

 private:
  std::map<std::string, std::string> values_;  // with defaults filled in
  std::map<std::string, std::string> set_;     // what the user wrote
  std::string policy_;
};

struct PolicyInfo : PolicyDescription {
  // Builds the KV-cache policy (raster and next-scale families). A policy that
  // serves only the masked family (a feature cache, e.g. lazymar) throws here.
  std::function<std::unique_ptr<CachePolicy>(const PolicyParams&, const PolicyContext&)> create;
};

const std::vector<PolicyInfo>& policy_registry();
const PolicyInfo& find_policy(const std::string& name);  // throws InvalidArgumentError listing the known names

// The policy `spec` names, built on `context` (InvalidArgumentError for an
// unknown name, a parameter it does not take, a value out of range or an
// impossible budget on this geometry). The text form parses first: for
// callers whose spec arrives as text (a live change, a test).
std::unique_ptr<CachePolicy> make_policy(const PolicySpec& spec, const PolicyContext& context);
std::unique_ptr<CachePolicy> make_policy(const std::string& spec, const PolicyContext& context);

// Budget parameters shared by the compressing policies (budget_param_specs():
// rho, a fraction of the image tokens, or budget, in tokens). Resolves B and
// checks 0 < rho <= 1.
int64_t resolve_budget_tokens(const PolicyParams& params, const PolicyContext& context, const std::string& policy);

}  // namespace kvs
