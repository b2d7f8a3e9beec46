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

bool cuda_available() { return at::hasCUDA() && at::globalContext().hasCUDA(); }

int hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

DeviceChoice choose_device(DeviceKind requested, int threads) {
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
  module_logger("device").debug("using " + choice.description);
  return choice;
}

}  // namespace kvs
