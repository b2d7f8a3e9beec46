#pragma once
// A cache policy as chosen: its registry name and its parameters as given
// ("linear:rho=1/6,n_init=4" -> linear, {n_init: 4, rho: 1/6}). Text becomes a
// PolicySpec once, where it enters the program (a command-line option, the
// window's policy form, a PNG's metadata, a bench's list), and travels down
// typed: the request, the session, the policy registry. The registry checks
// the name and the parameters' values when it builds the policy
// (policy_registry.h); the window asks policy_spec_problem() first. Torch-free.
#include <map>
#include <string>

namespace kvs {

struct PolicySpec {
  std::string name = "full";
  std::map<std::string, std::string> params;

  std::string text() const;  // canonical "name:k=v,..." (parameters in name order; none: just the name)
  bool operator==(const PolicySpec& other) const { return name == other.name && params == other.params; }
  bool operator!=(const PolicySpec& other) const { return !(*this == other); }
};

// Throws InvalidArgumentError for malformed text (an empty name, an item
// without '=', a parameter given twice); unknown names and values are the
// registry's to refuse.
PolicySpec parse_policy_spec(const std::string& text);

}  // namespace kvs
