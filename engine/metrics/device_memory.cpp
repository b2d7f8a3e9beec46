#include "engine/metrics/device_memory.h"

#include <ATen/DeviceAccelerator.h>

#include <exception>

namespace kvs {

DeviceMemoryStats device_memory_stats(int cuda_index) {
  DeviceMemoryStats s;
  s.device_index = cuda_index;
  if (cuda_index < 0) {
    s.note = "CPU run";
    return s;
  }
  try {
    const auto accelerator = at::accelerator::getAccelerator(false);
    if (!accelerator || *accelerator != c10::DeviceType::CUDA || at::accelerator::deviceCount() <= cuda_index) {
      s.note = "no CUDA device " + std::to_string(cuda_index);
      return s;
    }
    const auto index = static_cast<c10::DeviceIndex>(cuda_index);
    const auto stats = at::accelerator::getDeviceStats(index);
    constexpr size_t kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    s.allocated_bytes = stats.allocated_bytes[kAll].current;
    s.peak_allocated_bytes = stats.allocated_bytes[kAll].peak;
    s.reserved_bytes = stats.reserved_bytes[kAll].current;
    const auto [free_bytes, total_bytes] = at::accelerator::getMemoryInfo(index);
    s.free_bytes = static_cast<int64_t>(free_bytes);
    s.total_bytes = static_cast<int64_t>(total_bytes);
    s.available = true;
  } catch (const std::exception& e) {
    s.available = false;
    s.note = e.what();
  }
  return s;
}

void reset_device_memory_peak(int cuda_index) {
  if (cuda_index < 0) return;
  try {
    const auto accelerator = at::accelerator::getAccelerator(false);
    if (accelerator && *accelerator == c10::DeviceType::CUDA && at::accelerator::deviceCount() > cuda_index)
      at::accelerator::resetPeakStats(static_cast<c10::DeviceIndex>(cuda_index));
  } catch (const std::exception&) {
    // Best effort: the peak then covers earlier work too.
  }
}

}  // namespace kvs
