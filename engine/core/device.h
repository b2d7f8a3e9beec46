#pragma once
// Run-time device choice. The same binary uses CUDA when LibTorch has it and a GPU
// is present ("auto"), and falls back to the CPU. The CPU thread count is always
// set explicitly: LibTorch's default can be 1 (docs/design.md#build-facts).
#include <string>

namespace kvs {

enum class DeviceKind { Auto, Cpu, Cuda };

DeviceKind parse_device_kind(const std::string& name);  // "auto" | "cpu" | "cuda"; throws

struct DeviceChoice {
  DeviceKind kind = DeviceKind::Cpu;  // resolved: Cpu or Cuda
  int cuda_index = 0;
  std::string description;  // e.g. "cpu (2 threads)" or "cuda:0 (NVIDIA H100)"
};

// Resolves Auto, checks availability (throws DeviceError for cuda without a GPU)
// and applies the thread count (threads <= 0 means all hardware threads).
DeviceChoice choose_device(DeviceKind requested, int threads);

bool cuda_available();
int hardware_threads();

}  // namespace kvs
