#pragma once
// Run-time device choice. The same binary uses CUDA when LibTorch has it and a GPU
// is present ("auto"), and falls back to the CPU. The CPU thread count is always
// set explicitly: LibTorch's default can be 1 (docs/design.md#build-facts).
#include <cstdint>
#include <string>

namespace kvs {

enum class DeviceKind { Auto, Cpu, Cuda };

DeviceKind parse_device_kind(const std::string& name);  // "auto" | "cpu" | "cuda"; throws

// The number format weights and the KV cache are kept in at run time. Auto is
// bf16 on CUDA (half the memory of f32, and what the official checkpoints of the
// large models are stored in) and f32 on the CPU (CPU matmuls in bf16/f16 are
// slower than in f32 on most machines, and f32 is what conformance compares).
enum class RunDtype { Auto, F32, Bf16, F16 };

RunDtype parse_run_dtype(const std::string& name);  // "auto" | "f32" | "bf16" | "f16"; throws
std::string run_dtype_name(RunDtype dtype);         // "auto", "f32", "bf16", "f16"
int64_t run_dtype_bytes(RunDtype dtype);            // 4 or 2 (Auto: throws)
// Auto resolved for a device kind (Auto resolves as choose_device would, without
// setting threads): bf16 on CUDA, f32 on the CPU; other dtypes as given.
RunDtype resolve_run_dtype(RunDtype dtype, DeviceKind kind);

struct DeviceChoice {
  DeviceKind kind = DeviceKind::Cpu;  // resolved: Cpu or Cuda
  int cuda_index = 0;
  std::string description;         // e.g. "cpu (2 threads)" or "cuda:0 (NVIDIA H100)"
  RunDtype dtype = RunDtype::F32;  // resolved: never Auto
};

// Resolves Auto, checks availability (throws DeviceError for cuda without a GPU)
// and applies the thread count (threads <= 0 means all hardware threads); the
// run-time dtype resolves Auto by the device chosen.
DeviceChoice choose_device(DeviceKind requested, int threads, RunDtype dtype = RunDtype::Auto);

bool cuda_available();
int hardware_threads();

}  // namespace kvs
