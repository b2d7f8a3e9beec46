#include "engine/core/device_menu.h"

#include <cstdio>

namespace kvs {

std::string format_gibibytes(int64_t bytes) {
  if (bytes <= 0) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buffer;
}

std::vector<DeviceMenuEntry> device_menu_entries(const std::vector<CudaDeviceInfo>& gpus) {
  std::vector<DeviceMenuEntry> entries;
  const std::string here = gpus.empty() ? std::string("the CPU; no GPU was found") : "GPU 0, " + gpus.front().name;
  entries.push_back({"auto", "Automatic", "The first GPU when one is present, else the CPU (here: " + here + ")"});
  entries.push_back({"cpu", "CPU", "The CPU, with the thread count of the settings"});
  for (const CudaDeviceInfo& gpu : gpus) {
    const std::string memory = format_gibibytes(gpu.total_bytes);
    const std::string value = "cuda:" + std::to_string(gpu.index);
    std::string label = "GPU " + std::to_string(gpu.index) + ": " + gpu.name;
    if (!memory.empty()) label += " (" + memory + ")";
    entries.push_back({value, label, "CUDA device " + std::to_string(gpu.index) + " (" + value + ")"});
  }
  return entries;
}

int device_menu_index(const std::vector<DeviceMenuEntry>& entries, const std::string& value) {
  const std::string wanted = value == "cuda" ? "cuda:0" : value;
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].value == wanted) return static_cast<int>(i);
  return 0;
}

}  // namespace kvs
