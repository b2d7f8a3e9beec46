#include "engine/cache/policies/policy_catalog.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

struct Range {
  double minimum, maximum;
};

// Bounds for the window's spin boxes and sliders. The registry declares types but
// not ranges; these follow its parameter descriptions ("0 < rho <= 1", "odd
// kernel", counts in tokens or lines). Unknown names get a generic range by kind.
Range range_for(const PolicyParamSpec& p) {
  static const std::map<std::string, Range> known = {
      {"rho", {0.01, 1.0}},     {"budget", {0, 65536}},      {"sink", {0, 4096}},
      {"n_init", {0, 4096}},    {"r", {0, 64}},              {"recent", {0, 1}},
      {"threshold", {0, 65536}}, {"tau", {0.01, 1}},         {"local_window", {0, 65536}},
      {"recent_lines", {0, 64}}, {"alpha", {0, 1}},          {"lambda", {0, 1}},
      {"window", {0, 65536}},   {"kernel", {1, 63}},        {"start", {0, 4096}},
      {"interval", {1, 4096}},  {"ratio", {0.01, 1}},       {"extra", {0, 4096}},
      {"layer", {0, 64}},       {"head_threshold", {1, 1000}},
  };
  if (auto it = known.find(p.name); it != known.end()) return it->second;
  switch (p.type) {
    case ParamType::Fraction: return {0, 1};
    case ParamType::Integer: return {0, 1e6};
    case ParamType::Real: return {0, 1e6};
    case ParamType::Choice: return {0, 0};
  }
  return {0, 1};
}

PolicyParamKind kind_of(ParamType t) {
  switch (t) {
    case ParamType::Integer: return PolicyParamKind::Integer;
    case ParamType::Real: return PolicyParamKind::Real;
    case ParamType::Fraction: return PolicyParamKind::Fraction;
    case ParamType::Choice: return PolicyParamKind::Choice;
  }
  return PolicyParamKind::Real;
}

std::vector<PolicyCatalogEntry> build_catalog() {
  std::vector<PolicyCatalogEntry> out;
  for (const PolicyInfo& info : policy_registry()) {
    PolicyCatalogEntry e{info.name, info.summary, info.reference, {}, info.families};
    for (const PolicyParamSpec& p : info.params) {
      const Range r = range_for(p);
      e.params.push_back({p.name, kind_of(p.type), p.default_value, r.minimum, r.maximum, p.description, p.choices});
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

bool PolicyCatalogEntry::has_budget() const {
  for (const auto& p : params)
    if (p.name == "rho") return true;
  return false;
}

const std::vector<PolicyCatalogEntry>& policy_catalog() {
  static const std::vector<PolicyCatalogEntry> catalog = build_catalog();
  return catalog;
}

const PolicyCatalogEntry* find_policy_entry(const std::string& name) {
  for (const auto& e : policy_catalog())
    if (e.name == name) return &e;
  return nullptr;
}

PolicySpecParts split_policy_spec(const std::string& spec) {
  const PolicySpec parsed = parse_policy_spec(spec);
  return {parsed.name, parsed.params};
}

std::string join_policy_spec(const PolicySpecParts& parts) {
  PolicySpec spec;
  spec.name = parts.name;
  spec.params = parts.params;
  return spec.text();
}

std::string policy_spec_problem(const std::string& spec) {
  try {
    const PolicySpec parsed = parse_policy_spec(spec);
    const PolicyInfo& info = find_policy(parsed.name);
    PolicyParams(parsed.params, info.params, info.name);
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

std::optional<double> parse_param_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto slash = text.find('/');
  if (slash != std::string::npos) {
    const auto num = parse_param_number(text.substr(0, slash));
    const auto den = parse_param_number(text.substr(slash + 1));
    if (!num || !den || *den == 0) return std::nullopt;
    return *num / *den;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == nullptr || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace kvs
