#include "engine/core/device.h"

#include <ATen/Context.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/Parallel.h>
#include <c10/core/DeviceType.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "engine/core/cuda_backend.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"

namespace kvs {

DeviceSpec parse_device(const std::string& name) {
  if (name == "auto") return {DeviceKind::Auto, -1};
  if (name == "cpu") return {DeviceKind::Cpu, -1};
  if (name == "cuda") return {DeviceKind::Cuda, -1};
  const std::string prefix = "cuda:";
  if (name.rfind(prefix, 0) == 0) {
    const std::string digits = name.substr(prefix.size());
    const bool numeric = !digits.empty() && digits.size() <= 4 &&
                         digits.find_first_not_of("0123456789") == std::string::npos &&
                         (digits.size() == 1 || digits[0] != '0');
    if (numeric && std::stoi(digits) < 1024) return {DeviceKind::Cuda, std::stoi(digits)};
    throw InvalidArgumentError("unknown device '" + name +
                               "': a GPU is named cuda:N with N its index (cuda:0, cuda:1, ...)");
  }
  throw InvalidArgumentError("unknown device '" + name + "' (expected auto, cpu, cuda or cuda:N)");
}

DeviceKind parse_device_kind(const std::string& name) { return parse_device(name).kind; }

std::string device_spec_name(const DeviceSpec& spec) {
  switch (spec.kind) {
    case DeviceKind::Auto: return "auto";
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Cuda: return spec.cuda_index < 0 ? "cuda" : "cuda:" + std::to_string(spec.cuda_index);
  }
  return "auto";
}

RunDtype parse_run_dtype(const std::string& name) {
  if (name == "auto") return RunDtype::Auto;
  if (name == "f32" || name == "float32") return RunDtype::F32;
  if (name == "bf16" || name == "bfloat16") return RunDtype::Bf16;
  if (name == "f16" || name == "float16") return RunDtype::F16;
  throw InvalidArgumentError("unknown dtype '" + name + "' (expected auto, f32, bf16 or f16)");
}

std::string run_dtype_name(RunDtype dtype) {
  switch (dtype) {
    case RunDtype::Auto: return "auto";
    case RunDtype::F32: return "f32";
    case RunDtype::Bf16: return "bf16";
    case RunDtype::F16: return "f16";
  }
  return "auto";
}

int64_t run_dtype_bytes(RunDtype dtype) {
  if (dtype == RunDtype::Auto) throw InvalidArgumentError("run dtype 'auto' has no size until a device is chosen");
  return dtype == RunDtype::F32 ? 4 : 2;
}

RunDtype resolve_run_dtype(RunDtype dtype, DeviceKind kind) {
  if (dtype != RunDtype::Auto) return dtype;
  const bool cuda = kind == DeviceKind::Cuda || (kind == DeviceKind::Auto && cuda_available());
  return cuda ? RunDtype::Bf16 : RunDtype::F32;
}

bool cuda_available() {
  // LibTorch decides once whether it has CUDA: the CUDA part must be loaded first.
  load_cuda_backend();
  return at::hasCUDA() && at::globalContext().hasCUDA();
}

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

namespace {

// The CUDA driver, opened at run time: names and memory of the GPUs without
// CUDA headers, and without creating a context on any of them.
std::vector<CudaDeviceInfo> query_cuda_devices(int count) {
  std::vector<CudaDeviceInfo> out;
  for (int i = 0; i < count; ++i) out.push_back({i, "CUDA device " + std::to_string(i), 0});
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) return out;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using NameFn = int (*)(char*, int, int);
  using MemFn = int (*)(size_t*, int);
  const auto init = reinterpret_cast<InitFn>(::dlsym(driver, "cuInit"));
  const auto get_count = reinterpret_cast<CountFn>(::dlsym(driver, "cuDeviceGetCount"));
  const auto get = reinterpret_cast<GetFn>(::dlsym(driver, "cuDeviceGet"));
  const auto name = reinterpret_cast<NameFn>(::dlsym(driver, "cuDeviceGetName"));
  const auto mem = reinterpret_cast<MemFn>(::dlsym(driver, "cuDeviceTotalMem_v2"));
  int driver_count = 0;
  if (init && get_count && get && name && init(0) == 0 && get_count(&driver_count) == 0) {
    for (int i = 0; i < count && i < driver_count; ++i) {
      int handle = 0;
      if (get(&handle, i) != 0) continue;
      char buffer[256] = {};
      if (name(buffer, static_cast<int>(sizeof buffer) - 1, handle) == 0 && buffer[0] != 0)
        out[static_cast<size_t>(i)].name = buffer;
      size_t bytes = 0;
      if (mem && mem(&bytes, handle) == 0) out[static_cast<size_t>(i)].total_bytes = static_cast<int64_t>(bytes);
    }
  }
  // The driver stays loaded (LibTorch's CUDA runtime uses it too).
  return out;
}

}  // namespace

std::vector<CudaDeviceInfo> cuda_devices() {
  static std::once_flag once;
  static std::vector<CudaDeviceInfo> devices;
  std::call_once(once, [] {
    if (!cuda_available()) return;
    int count = 0;
    try {
      const auto accelerator = at::accelerator::getAccelerator(false);
      if (accelerator && *accelerator == c10::DeviceType::CUDA) count = at::accelerator::deviceCount();
    } catch (const std::exception&) {
      count = 0;
    }
    devices = query_cuda_devices(count);
  });
  return devices;
}

std::string describe_auto_device() {
  const CudaBackendStatus& backend = load_cuda_backend();
  const std::vector<CudaDeviceInfo> gpus = cuda_devices();
  std::string text = gpus.empty() ? "cpu" : "cuda:0 (" + gpus.front().name + ")";
  text += "; " + describe_cuda_backend(backend);
  const bool has_cuda_part = backend.state == CudaBackendStatus::State::Linked ||
                             backend.state == CudaBackendStatus::State::Loaded;
  if (gpus.empty() && has_cuda_part) text += "; no GPU found";
  return text;
}

DeviceChoice choose_device(DeviceKind requested, int threads, RunDtype dtype) {
  return choose_device(DeviceSpec{requested, -1}, threads, dtype);
}

DeviceChoice choose_device(const DeviceSpec& requested, int threads, RunDtype dtype) {
  const int n_threads = threads > 0 ? threads : hardware_threads();
  at::set_num_threads(n_threads);
  DeviceChoice choice;
  const bool have_cuda = cuda_available();
  const std::vector<CudaDeviceInfo> gpus = have_cuda ? cuda_devices() : std::vector<CudaDeviceInfo>{};
  const std::string asked = device_spec_name(requested);
  if (requested.kind == DeviceKind::Cuda && gpus.empty()) {
    throw DeviceError("--device " + asked + " requested but no CUDA device is available (this LibTorch " +
                      std::string(at::hasCUDA() ? "has CUDA support but found no GPU" : "was built without CUDA") +
                      "); use --device cpu or auto");
  }
  if (requested.kind == DeviceKind::Cuda || (requested.kind == DeviceKind::Auto && !gpus.empty())) {
    const int index = std::max(0, requested.cuda_index);
    if (index >= static_cast<int>(gpus.size())) {
      const std::string present = gpus.size() == 1 ? "only 1 CUDA device is present (cuda:0)"
                                                   : "only " + std::to_string(gpus.size()) +
                                                         " CUDA devices are present (cuda:0 to cuda:" +
                                                         std::to_string(gpus.size() - 1) + ")";
      throw DeviceError("--device " + asked + " requested but " + present + "; use one of those, auto or cpu");
    }
    choice.kind = DeviceKind::Cuda;
    choice.cuda_index = index;
    choice.description = "cuda:" + std::to_string(index) + " (" + gpus[static_cast<size_t>(index)].name + ")";
    at::accelerator::setDeviceIndex(static_cast<c10::DeviceIndex>(index));
  } else {
    choice.kind = DeviceKind::Cpu;
    choice.description = "cpu (" + std::to_string(n_threads) + " threads)";
  }
  choice.dtype = resolve_run_dtype(dtype, choice.kind);
  if (choice.dtype != RunDtype::F32) choice.description += ", " + run_dtype_name(choice.dtype);
  module_logger("device").debug("using " + choice.description);
  return choice;
}

}  // namespace kvs
