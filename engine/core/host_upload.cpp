#include "engine/core/host_upload.h"

#include <ATen/core/Tensor.h>

namespace kvs {

at::Tensor upload_without_wait(const at::Tensor& host, const at::Device& device) {
  if (!device.is_cuda() || !host.device().is_cpu()) return host.to(device);
  return host.contiguous().pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace kvs
