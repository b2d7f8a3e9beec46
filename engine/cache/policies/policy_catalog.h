#pragma once
// The policy registry seen through plain structs, for code that must not include
// ATen (the Qt window; docs/design.md, "Two hard rules"): names, one-line summaries and typed
// parameters with defaults, ranges and one-sentence help. Built on top of
// policy_registry() so that the window, the CLI and the benchmarks list exactly
// the same policies and parameters.
//
// Ranges are UI hints (slider and spin-box bounds); the registry stays the one
// validator (policy_spec_problem() and the session check every spec).
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvs {

enum class PolicyParamKind { Integer, Real, Fraction, Choice };

struct PolicyParamInfo {
  std::string name;
  PolicyParamKind kind = PolicyParamKind::Real;
  std::string default_value;         // as the registry writes it ("1/6", "4", "cond")
  double minimum = 0, maximum = 1;   // numeric kinds
  std::string help;                  // one sentence
  std::vector<std::string> choices;  // Choice
};

struct PolicyCatalogEntry {
  std::string name;       // "linear"
  std::string summary;    // one line
  std::string reference;  // paper and section
  std::vector<PolicyParamInfo> params;
  std::vector<std::string> families;  // "raster", "scale", "masked" (see PolicyInfo::families)
  bool has_budget() const;  // takes the shared rho / budget parameters
};

// Every registered policy, in registry order ("full" first).
const std::vector<PolicyCatalogEntry>& policy_catalog();
// nullptr when unknown.
const PolicyCatalogEntry* find_policy_entry(const std::string& name);

// A spec split into its name and parameters ("linear:rho=1/6" -> linear, {rho: 1/6}).
struct PolicySpecParts {
  std::string name;
  std::map<std::string, std::string> params;
};
// Throws InvalidArgumentError for malformed text (not for unknown names).
PolicySpecParts split_policy_spec(const std::string& spec);
// Canonical "name:k=v,..." (parameters in name order; none: just the name).
std::string join_policy_spec(const PolicySpecParts& parts);

// Empty when the name and parameters are valid; else the registry's message.
// Budgets that need the model's grid are checked when a run starts.
std::string policy_spec_problem(const std::string& spec);

// "1/6", "0.25", "4" -> number; nullopt for anything else.
std::optional<double> parse_param_number(const std::string& text);

}  // namespace kvs
