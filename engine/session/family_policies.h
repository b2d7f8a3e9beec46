#pragma once
// Which policies serve a model family and what a policy needs of it before a
// run, answered once for the window, the CLI and the benchmark (torch-free):
// the window asks, it does not re-derive the rules.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cache/policies/policy_description.h"
#include "engine/session/family_description.h"

namespace kvs {

// Whether `policy` serves models of `family` (the family's policy family is one
// of the policy's).
bool policy_serves(const PolicyDescription& policy, const FamilyDescription& family);

// The registered policies that serve `family`, in registry order.
std::vector<std::string> policies_for(const FamilyDescription& family);

// Empty when `spec`'s policy serves `family`, or when the spec is malformed or
// names no policy (policy_spec_problem says how); else why not, naming the
// policy families it serves and the policies this family takes.
std::string policy_family_problem(const std::string& spec, const FamilyDescription& family);

// The calibration a run of `spec` on `family` measures on first use when the
// bundle lacks its file (HeatKV on VAR, ...); nullptr: none.
const FamilyDescription::FirstUseCalibration* first_use_calibration(const std::string& spec,
                                                                    const FamilyDescription& family);

// The calibration set `spec` names through the calibration's own parameter
// (HeatKV's calibration_images=N): N > 0, or 0 for the default set (also for a
// value the run will refuse itself).
int64_t calibration_images(const std::string& spec, const FamilyDescription::FirstUseCalibration& calibration);

}  // namespace kvs
