#include "engine/core/device.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/DeviceType.h>

#include <thread>

#include "engine/core/errors.h"
#include "engine/core/logging.h"

namespace kvs {

DeviceKind parse_device_kind(const std::string& name) {
  if (name == "auto") return DeviceKind::Auto;
  if (name == "cpu") return DeviceKind::Cpu;
  if (name == "cuda") return DeviceKind::Cuda;
  throw InvalidArgumentError("unknown device '" + name + "' (expected auto, cpu or cuda)");
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

bool cuda_available() { return at::hasCUDA() && at::globalContext().hasCUDA(); }

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

DeviceChoice choose_device(DeviceKind requested, int threads, RunDtype dtype) {
  const int n_threads = threads > 0 ? threads : hardware_threads();
  at::set_num_threads(n_threads);
  DeviceChoice choice;
  const bool have_cuda = cuda_available();
  if (requested == DeviceKind::Cuda && !have_cuda) {
    throw DeviceError("--device cuda requested but no CUDA device is available (this LibTorch " +
                      std::string(at::hasCUDA() ? "has CUDA support but found no GPU" : "was built without CUDA") +
                      "); use --device cpu or auto");
  }
  if (requested == DeviceKind::Cuda || (requested == DeviceKind::Auto && have_cuda)) {
    choice.kind = DeviceKind::Cuda;
    choice.description = "cuda:0";
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
