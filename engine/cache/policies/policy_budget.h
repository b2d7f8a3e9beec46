#pragma once
// How a policy takes its cache budget and how a spec's budget reads, with the
// registry's precedence, for everyone who shows or edits a budget (the window's
// budget slider, the compare view): one rule, written beside the registry that
// enforces it. Torch-free.
#include <string>

#include "engine/cache/policies/policy_description.h"

namespace kvs {

// The shared rho / budget-in-tokens pair (the raster and baseline policies), a
// share of the whole cache (HeatKV's `budget` fraction, over all scales and
// heads), or none (full, AMS-KV's token counts, LazyMAR's feature caches).
enum class PolicyBudgetKind { None, RhoOrTokens, CacheShare };

PolicyBudgetKind policy_budget_kind(const PolicyDescription* policy);

// A spec's budget as the policy will read it: for a cache-share policy its
// `budget` (or the default) as a share; for the rho/tokens pair, `budget` > 0 as
// a token count (it overrides rho), else rho (or its default) as a share of the
// image tokens; nothing for the others, an unknown name or malformed text.
struct PolicyBudget {
  enum class Unit { None, Share, Tokens };
  Unit unit = Unit::None;
  double value = 0;
};
PolicyBudget read_policy_budget(const std::string& spec);

}  // namespace kvs
