#include "engine/core/cuda_graphs.h"

#include <cstdlib>
#include <cstring>

#include "engine/core/errors.h"

namespace kvs {

bool parse_cuda_graphs(const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw InvalidArgumentError("cuda graphs must be on or off, got '" + value + "'");
}

bool cuda_graphs_disabled_by_environment() {
  static const bool disabled = [] {
    const char* v = std::getenv("KVSTUDIO_CUDA_GRAPHS");
    return v != nullptr && (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0);
  }();
  return disabled;
}

bool cuda_graphs_built() { return KVSTUDIO_CUDA_GRAPHS != 0; }

std::string combine_cuda_graphs_reports(const std::string& a, const std::string& b) {
  if (a.empty() || a == b) return b;
  if (b.empty()) return a;
  return cuda_graphs_report::kPartly;
}

}  // namespace kvs
