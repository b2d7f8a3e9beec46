#pragma once
// Results of checking our ports against reference outputs of the official code
// (the conformance cases, docs/conformance.md). Torch-free so the CLI can print it.
#include <string>
#include <vector>

namespace kvs {

struct ConformanceCheck {
  std::string tensor;  // io tensor name
  std::string role;    // output | debug
  bool exact = false;  // integer tensor: counts mismatches
  double max_abs_error = 0;
  double atol = 0;
  int64_t mismatches = 0;  // elements with |got - ref| > atol
  int64_t elements = 0;
  bool passed = false;
  bool skipped = false;
  std::string note;
};

struct ConformanceReport {
  std::string case_name;
  std::string family;
  std::vector<ConformanceCheck> checks;
  bool passed() const {
    bool any = false;
    for (const auto& c : checks) {
      if (c.skipped) continue;
      any = true;
      if (!c.passed) return false;
    }
    return any;
  }
};

// Loads a case manifest (<case>.json beside its weights and io files), runs every
// check it defines and returns the report. Throws kvs::Error for unreadable or
// unsupported cases. `device`: "cpu" | "cuda" | "cuda:N" | "auto".
ConformanceReport run_conformance_case(const std::string& case_json_path, const std::string& device = "cpu");

}  // namespace kvs
