#include "engine/session/family_policies.h"

#include <algorithm>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/number_parsing.h"

namespace kvs {
namespace {

std::string joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

}  // namespace

bool policy_serves(const PolicyDescription& policy, const FamilyDescription& family) {
  return !family.policy_family.empty() &&
         std::find(policy.families.begin(), policy.families.end(), family.policy_family) != policy.families.end();
}

std::vector<std::string> policies_for(const FamilyDescription& family) {
  std::vector<std::string> out;
  for (const auto& policy : policy_catalog())
    if (policy_serves(policy, family)) out.push_back(policy.name);
  return out;
}

std::string policy_family_problem(const std::string& spec, const FamilyDescription& family) {
  std::string name;
  try {
    name = parse_policy_spec(spec).name;
  } catch (const std::exception&) {
    return {};
  }
  const PolicyDescription* policy = find_policy_entry(name);
  if (!policy || policy_serves(*policy, family)) return {};
  return "Policy '" + name + "' works on " + joined(policy->families, " / ") + " models only; this " +
         family.display_name + " model takes: " + joined(policies_for(family), ", ");
}

const FamilyDescription::FirstUseCalibration* first_use_calibration(const std::string& spec,
                                                                    const FamilyDescription& family) {
  std::string name;
  try {
    name = parse_policy_spec(spec).name;
  } catch (const std::exception&) {
    return nullptr;
  }
  for (const auto& c : family.calibrated_on_first_use)
    if (c.policy == name) return &c;
  return nullptr;
}

int64_t calibration_images(const std::string& spec, const FamilyDescription::FirstUseCalibration& calibration) {
  if (calibration.images_param.empty()) return 0;
  try {
    const auto params = parse_policy_spec(spec).params;
    const auto it = params.find(calibration.images_param);
    if (it == params.end()) return 0;
    const auto n = parse_number_text(it->second);
    return n && *n > 0 ? static_cast<int64_t>(*n) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace kvs
