#include "engine/cache/policies/policy_description.h"

#include <utility>

namespace kvs {
namespace {

PolicyParamSpec numeric_param(std::string name, PolicyParamKind kind, std::string default_value, double minimum,
                              double maximum, std::string help) {
  return {std::move(name), kind, std::move(default_value), minimum, maximum, std::move(help), {}};
}

}  // namespace

PolicyParamSpec integer_param(std::string name, std::string default_value, double minimum, double maximum,
                              std::string help) {
  return numeric_param(std::move(name), PolicyParamKind::Integer, std::move(default_value), minimum, maximum,
                       std::move(help));
}

PolicyParamSpec real_param(std::string name, std::string default_value, double minimum, double maximum,
                           std::string help) {
  return numeric_param(std::move(name), PolicyParamKind::Real, std::move(default_value), minimum, maximum,
                       std::move(help));
}

PolicyParamSpec fraction_param(std::string name, std::string default_value, double minimum, double maximum,
                               std::string help) {
  return numeric_param(std::move(name), PolicyParamKind::Fraction, std::move(default_value), minimum, maximum,
                       std::move(help));
}

PolicyParamSpec choice_param(std::string name, std::string default_value, std::vector<std::string> choices,
                             std::string help) {
  return {std::move(name), PolicyParamKind::Choice, std::move(default_value), 0, 0,
          std::move(help), std::move(choices)};
}

bool PolicyDescription::has_budget() const { return find_param("rho") != nullptr; }

const PolicyParamSpec* PolicyDescription::find_param(const std::string& param) const {
  for (const auto& p : params)
    if (p.name == param) return &p;
  return nullptr;
}

std::vector<PolicyParamSpec> budget_param_specs(const std::string& default_rho) {
  return {fraction_param("rho", default_rho, 0.01, 1.0,
                         "budget as a fraction of the image tokens, B = rho x N (0 < rho <= 1)"),
          integer_param("budget", "0", 0, 65536, "budget in image tokens per layer and head (overrides rho when > 0)")};
}

}  // namespace kvs
