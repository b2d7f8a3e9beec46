#include "engine/core/cuda_backend.h"

#include <ATen/Context.h>
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "engine/core/logging.h"

namespace kvs {
namespace {

// The folder libtorch_cpu.so was loaded from: the CUDA part is installed beside
// it (the wheel's layout, which the packages keep).
std::filesystem::path torch_library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&at::globalContext), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  const std::filesystem::path library = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path(info.dli_fname).parent_path() : library.parent_path();
}

CudaBackendStatus open_cuda_backend() {
  CudaBackendStatus status;
  if (void* linked = ::dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(linked);  // drops only the reference RTLD_NOLOAD added
    status.state = CudaBackendStatus::State::Linked;
    return status;
  }
  const std::filesystem::path library = torch_library_dir() / "libtorch_cuda.so";
  status.library = library.string();
  std::error_code ec;
  if (!std::filesystem::exists(library, ec)) {
    status.state = CudaBackendStatus::State::NotInstalled;
    return status;
  }
  // Global, as if linked: the CUDA libraries it opens later resolve against it.
  if (::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* message = ::dlerror();
    status.state = CudaBackendStatus::State::LoadFailed;
    status.error = message ? message : "unknown error";
    return status;
  }
  status.state = CudaBackendStatus::State::Loaded;
  return status;
}

}  // namespace

const CudaBackendStatus& load_cuda_backend() {
  static std::once_flag once;
  static CudaBackendStatus status;
  std::call_once(once, [] {
    status = open_cuda_backend();
    const ModuleLog log = module_logger("device");
    if (status.state == CudaBackendStatus::State::LoadFailed) log.warn(describe_cuda_backend(status));
    else log.info(describe_cuda_backend(status));
  });
  return status;
}

std::string describe_cuda_backend(const CudaBackendStatus& status) {
  switch (status.state) {
    case CudaBackendStatus::State::Linked: return "LibTorch's CUDA part linked in";
    case CudaBackendStatus::State::Loaded: return "LibTorch's CUDA part loaded from " + status.library;
    case CudaBackendStatus::State::NotInstalled:
      return "LibTorch's CUDA part not installed (no " + status.library + "): CPU only";
    case CudaBackendStatus::State::LoadFailed: return "LibTorch's CUDA part failed to load, CPU only: " + status.error;
  }
  return {};
}

}  // namespace kvs
