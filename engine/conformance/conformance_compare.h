#pragma once
// Comparing one computed tensor with a conformance case's reference, by the
// rules of the conformance cases (docs/conformance.md): pass if max |got - ref| <= atol (per
// index-0 slice with "atol_per_index0"); integer tensors with atol 0 must match
// exactly. Shared by the per-family runners (llamagen_, var_ and mar_conformance.cpp).
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "engine/conformance/conformance_report.h"

namespace kvs {

// `spec`: the io tensor's entry of the case JSON (role, atol, atol_per_index0).
ConformanceCheck compare_with_reference(const std::string& name, const nlohmann::ordered_json& spec,
                                        const at::Tensor& got, const at::Tensor& ref);

// One output / debug io tensor's check: `produce` fills it and returns true, or
// returns false when no runner knows the tensor (debug tensors are then skipped,
// outputs fail with a note); an Error it throws becomes a failed check that
// carries the message.
ConformanceCheck checked_output(const std::string& name, const std::string& role,
                                const std::function<bool(ConformanceCheck&)>& produce);

// Every output and debug tensor of a case's io list, checked in order with
// checked_output(): `produce(name, spec, check)` fills a check and returns true,
// or returns false for a tensor it does not know.
void check_outputs(const nlohmann::ordered_json& tensors, ConformanceReport& report,
                   const std::function<bool(const std::string& name, const nlohmann::ordered_json& spec,
                                            ConformanceCheck& check)>& produce);

}  // namespace kvs
