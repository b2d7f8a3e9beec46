#include "engine/cache/policies/policy_budget.h"

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/number_parsing.h"

namespace kvs {
namespace {

std::string default_of(const PolicyDescription& policy, const std::string& name) {
  for (const auto& p : policy.params)
    if (p.name == name) return p.default_value;
  return {};
}

}  // namespace

PolicyBudgetKind policy_budget_kind(const PolicyDescription* policy) {
  if (!policy) return PolicyBudgetKind::None;
  if (policy->has_budget()) return PolicyBudgetKind::RhoOrTokens;
  for (const auto& p : policy->params)
    if (p.name == "budget" && p.kind == PolicyParamKind::Fraction) return PolicyBudgetKind::CacheShare;
  return PolicyBudgetKind::None;
}

PolicyBudget read_policy_budget(const std::string& spec) {
  PolicySpec parts;
  try {
    parts = parse_policy_spec(spec);
  } catch (const std::exception&) {
    return {};
  }
  const PolicyDescription* policy = find_policy_entry(parts.name);
  const auto given = [&](const std::string& name) {
    const auto it = parts.params.find(name);
    return it != parts.params.end() ? parse_number_text(it->second) : std::nullopt;
  };
  switch (policy_budget_kind(policy)) {
    case PolicyBudgetKind::CacheShare: {
      const auto share = given("budget") ? given("budget") : parse_number_text(default_of(*policy, "budget"));
      return share ? PolicyBudget{PolicyBudget::Unit::Share, *share} : PolicyBudget{};
    }
    case PolicyBudgetKind::RhoOrTokens: {
      if (const auto tokens = given("budget"); tokens && *tokens > 0) return {PolicyBudget::Unit::Tokens, *tokens};
      const auto rho = given("rho") ? given("rho") : parse_number_text(default_of(*policy, "rho"));
      return rho ? PolicyBudget{PolicyBudget::Unit::Share, *rho} : PolicyBudget{};
    }
    case PolicyBudgetKind::None: break;
  }
  return {};
}

}  // namespace kvs
