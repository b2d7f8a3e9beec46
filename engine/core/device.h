#pragma once
// Run-time device choice. The same binary uses CUDA when LibTorch has it and a GPU
// is present ("auto"), and falls back to the CPU. The CPU thread count is always
// set explicitly: LibTorch's default can be 1 (docs/design.md#build-facts).
//
// Device names, as --device and the window's device menu take them: "auto" (the
// first GPU when one is present, else the CPU), "cpu", "cuda" (the first GPU,
// cuda:0) and "cuda:N" (GPU N, in the order CUDA numbers them; CUDA_VISIBLE_DEVICES
// applies). A GPU that is not present is refused when the device is chosen, with
// the number of GPUs that are.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/errors.h"

namespace kvs {

// The device ran out of memory during a run (LibTorch's c10::OutOfMemoryError,
// e.g. CUDA's caching allocator failing to allocate); GenerationSession::run
// throws it with the allocator's first line. The session stays usable: a smaller
// request may fit (bench --max-memory counts it as "does not fit").
class OutOfMemoryError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

enum class DeviceKind { Auto, Cpu, Cuda };

// A parsed device name: the kind and, for "cuda:N", the GPU's index (-1: none
// named, i.e. "cuda" or "auto", which use GPU 0).
struct DeviceSpec {
  DeviceKind kind = DeviceKind::Auto;
  int cuda_index = -1;
};

// "auto" | "cpu" | "cuda" | "cuda:N" (N a decimal index, 0..1023); throws
// InvalidArgumentError naming the forms for anything else. Torch-free.
DeviceSpec parse_device(const std::string& name);
DeviceKind parse_device_kind(const std::string& name);  // parse_device(name).kind
std::string device_spec_name(const DeviceSpec& spec);   // "auto", "cpu", "cuda", "cuda:1"

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

// Resolves Auto, checks availability (throws DeviceError for cuda without a GPU,
// and for cuda:N when N is not one of the GPUs present, naming how many are) and
// applies the thread count (threads <= 0 means all hardware threads); the run-time
// dtype resolves Auto by the device chosen. A CUDA choice also becomes the calling
// thread's current CUDA device, so that work that follows the current device
// (streams, kernels launched without a guard) lands on the chosen GPU.
DeviceChoice choose_device(const DeviceSpec& requested, int threads, RunDtype dtype = RunDtype::Auto);
// The same for a kind alone (cuda: GPU 0).
DeviceChoice choose_device(DeviceKind requested, int threads, RunDtype dtype = RunDtype::Auto);

bool cuda_available();
int hardware_threads();

// The GPUs LibTorch can use, in index order (empty without CUDA or without a
// GPU). The name and memory come from the CUDA driver when it can be asked
// (without creating a context on the GPU); otherwise the name is "CUDA device N"
// and total_bytes 0. Queried once per process.
struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int64_t total_bytes = 0;
};
std::vector<CudaDeviceInfo> cuda_devices();

}  // namespace kvs
