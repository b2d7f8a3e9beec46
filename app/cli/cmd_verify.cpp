#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/conformance/conformance_report.h"

namespace kvs::cli {

int cmd_verify(const std::vector<std::string>& args) {
  ArgParser p(args, {"--device"}, {"--help"}, 1);
  if (p.flag("--help") || p.positional().empty()) {
    std::puts(
        "usage: kvstudio-cli verify <case.json> [--device cpu|cuda|cuda:N|auto]\n"
        "  runs every check of a conformance case (official outputs on tiny configs) and\n"
        "  exits non-zero if any fails; always in float32 (the references' dtype), whatever\n"
        "  the device");
    return p.flag("--help") ? 0 : 2;
  }
  const ConformanceReport report = run_conformance_case(p.positional()[0], p.get("--device", "cpu"));
  std::printf("case %s (%s)\n", report.case_name.c_str(), report.family.c_str());
  int failed = 0, passed = 0, skipped = 0;
  for (const auto& c : report.checks) {
    const char* status = c.skipped ? "SKIP" : (c.passed ? "PASS" : "FAIL");
    if (c.skipped) ++skipped;
    else if (c.passed) ++passed;
    else ++failed;
    if (c.exact) {
      std::printf("  %-4s %-26s exact: %lld/%lld match%s%s\n", status, c.tensor.c_str(),
                  (long long)(c.elements - c.mismatches), (long long)c.elements, c.note.empty() ? "" : "  — ",
                  c.note.c_str());
    } else {
      std::printf("  %-4s %-26s max |err| %.3g (atol %.3g), %lld/%lld over%s%s\n", status, c.tensor.c_str(),
                  c.max_abs_error, c.atol, (long long)c.mismatches, (long long)c.elements, c.note.empty() ? "" : "  — ",
                  c.note.c_str());
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return report.passed() ? 0 : 1;
}

}  // namespace kvs::cli
