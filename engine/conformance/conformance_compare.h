#pragma once
// Comparing one computed tensor with a conformance case's reference, by the
// rules of the conformance cases (docs/conformance.md): pass if max |got - ref| <= atol (per
// index-0 slice with "atol_per_index0"); integer tensors with atol 0 must match
// exactly. Shared by the per-family runners (llamagen_, var_ and mar_conformance.cpp).
#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "engine/conformance/conformance_report.h"
#include "engine/io/safetensors_reader.h"

namespace kvs {

// `spec`: the io tensor's entry of the case JSON (role, atol, atol_per_index0).
// `where`, when given (the io tensor a "compare_where" field names), limits the
// comparison to the elements where it is non-zero.
ConformanceCheck compare_with_reference(const std::string& name, const nlohmann::ordered_json& spec,
                                        const at::Tensor& got, const at::Tensor& ref, const at::Tensor& where = {});

// One output / debug io tensor's check: `produce` fills it and returns true, or
// returns false when no runner knows the tensor (debug tensors are then skipped,
// outputs fail with a note); an Error it throws becomes a failed check that
// carries the message.
ConformanceCheck checked_output(const std::string& name, const std::string& role,
                                const std::function<bool(ConformanceCheck&)>& produce);

// A conformance case's files, opened: the weights and io safetensors its manifest
// names, its io tensor list, and the report the family's driver fills (case name
// and family set).
struct OpenedConformanceCase {
  OpenedConformanceCase(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                        const std::string& family);
  ConformanceReport report;
  std::shared_ptr<io::SafetensorsReader> weights, io_file;
  const nlohmann::ordered_json& tensors;
  // An input tensor of the io file; FormatError naming the case when it lacks it.
  at::Tensor input(const std::string& name) const;
};

// Every output and debug tensor of a case's io list, checked in order with
// checked_output(): `produce(name, spec, check)` fills a check and returns true,
// or returns false for a tensor it does not know.
void check_outputs(const nlohmann::ordered_json& tensors, ConformanceReport& report,
                   const std::function<bool(const std::string& name, const nlohmann::ordered_json& spec,
                                            ConformanceCheck& check)>& produce);

}  // namespace kvs
