#pragma once
// Comparing one computed tensor with a conformance case's reference, by the
// rules of ../shared/conformance/README.md: pass if max |got - ref| <= atol (per
// index-0 slice with "atol_per_index0"); integer tensors with atol 0 must match
// exactly. Shared by the per-family runners (llamagen_conformance.cpp, var_conformance.cpp).
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <string>

#include "engine/conformance/conformance_report.h"

namespace kvs {

// `spec`: the io tensor's entry of the case JSON (role, atol, atol_per_index0).
ConformanceCheck compare_with_reference(const std::string& name, const nlohmann::ordered_json& spec,
                                        const at::Tensor& got, const at::Tensor& ref);

}  // namespace kvs
