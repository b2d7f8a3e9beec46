#pragma once
// The torch device of a resolved DeviceChoice. Kept out of device.h so that the
// device choice stays torch-free for the window and the CLI.
#include <c10/core/Device.h>

#include "engine/core/device.h"

namespace kvs {

inline c10::Device torch_device(const DeviceChoice& device) {
  return device.kind == DeviceKind::Cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device.cuda_index))
                                         : c10::Device(c10::kCPU);
}

}  // namespace kvs
