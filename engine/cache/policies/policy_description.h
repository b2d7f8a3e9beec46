#pragma once
// What a cache policy states about itself, torch-free: its name, a one-line
// summary, the paper it follows, its typed parameters (defaults, ranges, one
// sentence of help, choices) and the model families it serves. The registry
// (policy_registry.h) pairs each description with its create function; the
// window (which never includes ATen, docs/design.md) reads the same descriptions
// through policy_catalog.h, so the CLI, the window and the benchmarks list
// exactly the same policies and parameters.
#include <string>
#include <vector>

namespace kvs {

enum class PolicyParamKind { Integer, Real, Fraction, Choice };

struct PolicyParamSpec {
  std::string name;
  PolicyParamKind kind = PolicyParamKind::Real;
  std::string default_value;  // as text ("1/6", "4", "cond")
  // Numeric kinds: bounds for the window's spin boxes and sliders. They are hints
  // only; PolicyParams and the policies themselves stay the validators (a budget
  // may be checked against the model's grid only when a run starts).
  double minimum = 0, maximum = 0;
  std::string help;                  // one sentence
  std::vector<std::string> choices;  // Choice
};

// One parameter of each kind, so that a policy's list reads one line per parameter.
PolicyParamSpec integer_param(std::string name, std::string default_value, double minimum, double maximum,
                              std::string help);
PolicyParamSpec real_param(std::string name, std::string default_value, double minimum, double maximum,
                           std::string help);
PolicyParamSpec fraction_param(std::string name, std::string default_value, double minimum, double maximum,
                               std::string help);
PolicyParamSpec choice_param(std::string name, std::string default_value, std::vector<std::string> choices,
                             std::string help);

struct PolicyDescription {
  std::string name;       // "linear"
  std::string summary;    // one line
  std::string reference;  // paper and section
  std::vector<PolicyParamSpec> params;
  // The model families the policy serves: "raster", "scale" (only where the
  // policy's supports_units() is true, or "full"), "masked" (MAR: "full" and the
  // feature caches, built by make_masked_feature_cache in lazymar_policy.h).
  std::vector<std::string> families = {"raster", "scale"};

  bool has_budget() const;                                            // takes the shared rho / budget parameters
  const PolicyParamSpec* find_param(const std::string& param) const;  // nullptr when unknown
};

// The budget parameters shared by the compressing policies: rho (fraction of the
// image tokens, 0 < rho <= 1) or budget (tokens, overrides rho when > 0).
std::vector<PolicyParamSpec> budget_param_specs(const std::string& default_rho);

}  // namespace kvs
