#include "engine/metrics/process_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace kvs {
namespace {

// A "Name:   1234 kB" line of a /proc file (/proc/self/status, /proc/meminfo), in bytes.
int64_t proc_field_bytes(const char* file, const std::string& field) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::istringstream ss(line.substr(field.size() + 1));
    int64_t value = 0;
    std::string unit;
    if (!(ss >> value)) return 0;
    ss >> unit;
    return unit == "kB" ? value * 1024 : value;
  }
  return 0;
}

int64_t status_field_bytes(const std::string& field) { return proc_field_bytes("/proc/self/status", field); }

}  // namespace

int64_t process_peak_resident_bytes() { return status_field_bytes("VmHWM"); }
int64_t system_available_bytes() { return proc_field_bytes("/proc/meminfo", "MemAvailable"); }
int64_t process_resident_bytes() { return status_field_bytes("VmRSS"); }

bool reset_process_peak_resident() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace kvs
