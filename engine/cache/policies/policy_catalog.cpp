#include "engine/cache/policies/policy_catalog.h"

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"

namespace kvs {

const PolicyDescription& PolicyCatalog::Iterator::operator*() const { return policy_registry()[index_]; }

size_t PolicyCatalog::size() const { return policy_registry().size(); }

const PolicyDescription& PolicyCatalog::operator[](size_t index) const { return policy_registry().at(index); }

PolicyCatalog policy_catalog() { return {}; }

const PolicyDescription* find_policy_entry(const std::string& name) {
  for (const auto& info : policy_registry())
    if (info.name == name) return &info;
  return nullptr;
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

}  // namespace kvs
