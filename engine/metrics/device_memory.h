#pragma once
// GPU memory as LibTorch's caching allocator sees it, for the window's gauges,
// the sessions' unit events and the benchmark. Torch-free header; the
// implementation uses LibTorch's device-generic accelerator API
// (<ATen/DeviceAccelerator.h>), so no CUDA headers are needed to build it.
//
// Choices:
// - Only runs on a CUDA device report numbers; CPU runs report `available =
//   false` (their memory is the process memory, engine/metrics/process_memory.h).
// - "allocated" is what live tensors hold (weights, KV cache, activations);
//   "reserved" is what the caching allocator holds from the driver (allocated
//   plus cached free blocks) — the number `nvidia-smi` is closest to.
// - total/free come from the driver (cudaMemGetInfo through the allocator), so
//   they include other processes' use.
// - Never throws: a failing query (no driver, device gone) gives available =
//   false and the reason in `note`.
#include <cstdint>
#include <string>

namespace kvs {

struct DeviceMemoryStats {
  bool available = false;
  int device_index = -1;
  int64_t allocated_bytes = 0;       // live tensors now
  int64_t peak_allocated_bytes = 0;  // since the last reset_device_memory_peak()
  int64_t reserved_bytes = 0;        // held by the caching allocator
  int64_t total_bytes = 0;           // the device's memory
  int64_t free_bytes = 0;            // free on the device (all processes)
  std::string note;                  // why not available
};

// cuda_index < 0: a CPU run (not available, no query made).
DeviceMemoryStats device_memory_stats(int cuda_index);

// Starts a new peak (a run's or a benchmark policy's own); no-op for cuda_index < 0.
void reset_device_memory_peak(int cuda_index);

}  // namespace kvs
