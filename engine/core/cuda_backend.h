#pragma once
// LibTorch's CUDA part (libtorch_cuda.so with the NVIDIA libraries it needs) is
// several gigabytes, so the packages carry it separately (kvstudio-cuda) and a
// packaged build links only LibTorch's CPU libraries
// (KVSTUDIO_TORCH_CUDA_AT_RUNTIME). This loads the CUDA part at run time when it
// is installed next to libtorch_cpu.so: opening libtorch_cuda.so registers
// LibTorch's CUDA backend, exactly as linking it would. It must happen before
// LibTorch is first asked about CUDA (LibTorch decides once per process whether
// CUDA exists), which is why cuda_available() calls it first.
//
// Torch-free header.
#include <string>

namespace kvs {

struct CudaBackendStatus {
  enum class State {
    Linked,        // the program links libtorch_cuda.so (a development build)
    Loaded,        // found next to libtorch_cpu.so and opened at run time
    NotInstalled,  // no libtorch_cuda.so next to libtorch_cpu.so: CPU only
    LoadFailed,    // present but would not open (a missing NVIDIA library, ...)
  };
  State state = State::NotInstalled;
  std::string library;  // the libtorch_cuda.so looked for or opened (empty when linked)
  std::string error;    // LoadFailed: the loader's message
};

// Loads the CUDA part once per process (later calls return the first result).
// Never throws.
const CudaBackendStatus& load_cuda_backend();

// One line for `kvstudio-cli info` and the start-up log, e.g. "LibTorch's CUDA
// part not installed (no /usr/lib/kvstudio/torch/lib/libtorch_cuda.so)".
std::string describe_cuda_backend(const CudaBackendStatus& status);

// What "auto" runs on and why, for `kvstudio-cli info` and the window's start-up
// log: "cpu; LibTorch's CUDA part not installed (...): CPU only" or
// "cuda:0 (NVIDIA H100 80GB HBM3); LibTorch's CUDA part loaded from ...".
// Defined in device.cpp (it asks for the GPUs).
std::string describe_auto_device();

}  // namespace kvs
