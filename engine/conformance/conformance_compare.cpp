#include "engine/conformance/conformance_compare.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <vector>

#include "engine/core/errors.h"

namespace kvs {

ConformanceCheck compare_with_reference(const std::string& name, const nlohmann::ordered_json& spec,
                                        const at::Tensor& got_in, const at::Tensor& ref_in, const at::Tensor& where) {
  ConformanceCheck check;
  check.tensor = name;
  check.role = spec.value("role", "output");
  check.atol = spec.value("atol", 0.0);
  at::Tensor ref = ref_in.to(at::kCPU);
  at::Tensor got = got_in.to(at::kCPU);
  check.exact = !at::isFloatingType(ref.scalar_type()) && check.atol == 0;
  if (got.sizes() != ref.sizes()) {
    check.note = "shape mismatch: got " + c10::str(got.sizes()) + ", reference " + c10::str(ref.sizes());
    return check;
  }
  at::Tensor diff = (got.to(at::kDouble) - ref.to(at::kDouble)).abs();
  if (where.defined()) {
    if (where.sizes() != ref.sizes()) {
      check.note = "compare_where mask shape " + c10::str(where.sizes()) + " differs from the reference's";
      return check;
    }
    diff = diff.masked_select(where.to(at::kCPU) != 0);
    check.note = "compared where the mask is 1 (" + std::to_string(diff.numel()) + " of " +
                 std::to_string(ref.numel()) + ")";
  }
  check.elements = diff.numel();
  check.max_abs_error = diff.numel() ? diff.max().item<double>() : 0.0;
  if (spec.contains("atol_per_index0")) {
    std::vector<double> per = spec["atol_per_index0"].get<std::vector<double>>();
    at::Tensor tol = at::tensor(per, at::TensorOptions().dtype(at::kDouble));
    std::vector<int64_t> shape(diff.dim(), 1);
    shape[0] = diff.size(0);
    check.mismatches = (diff > tol.view(shape)).sum().item<int64_t>();
    check.note = "per-index atol";
  } else {
    check.mismatches = (diff > check.atol).sum().item<int64_t>();
  }
  check.passed = check.mismatches == 0;
  return check;
}

ConformanceCheck checked_output(const std::string& name, const std::string& role,
                                const std::function<bool(ConformanceCheck&)>& produce) {
  ConformanceCheck check;
  try {
    if (produce(check)) return check;
    check.tensor = name;
    check.role = role;
    if (role == "debug") {
      check.skipped = true;
      check.note = "debug tensor not computed";
    } else {
      check.note = "no runner knows how to produce this output";
    }
  } catch (const Error& e) {
    check.tensor = name;
    check.role = role;
    check.passed = false;
    check.note = e.what();
  }
  return check;
}

OpenedConformanceCase::OpenedConformanceCase(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                             const std::string& family)
    : weights(io::SafetensorsReader::open((dir / manifest.at("weights").at("file").get<std::string>()).string())),
      io_file(io::SafetensorsReader::open((dir / manifest.at("io").at("file").get<std::string>()).string())),
      tensors(manifest.at("io").at("tensors")) {
  report.case_name = manifest.value("case", "");
  report.family = family;
}

at::Tensor OpenedConformanceCase::input(const std::string& name) const {
  if (!io_file->contains(name)) throw FormatError("case " + report.case_name + ": io file lacks tensor '" + name + "'");
  return io_file->tensor(name);
}

void check_outputs(const nlohmann::ordered_json& tensors, ConformanceReport& report,
                   const std::function<bool(const std::string& name, const nlohmann::ordered_json& spec,
                                            ConformanceCheck& check)>& produce) {
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::ordered_json& spec = it.value();
    const std::string role = spec.value("role", "");
    if (role != "output" && role != "debug") continue;
    report.checks.push_back(
        checked_output(name, role, [&](ConformanceCheck& check) { return produce(name, spec, check); }));
  }
}

}  // namespace kvs
