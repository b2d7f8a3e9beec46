#pragma once
// The torch device of a resolved DeviceChoice. Kept out of device.h so that the
// device choice stays torch-free for the window and the CLI.
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "engine/core/device.h"

namespace kvs {

inline c10::Device torch_device(const DeviceChoice& device) {
  return device.kind == DeviceKind::Cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device.cuda_index))
                                         : c10::Device(c10::kCPU);
}

// The scalar type weights and the KV cache use for a resolved DeviceChoice.
inline c10::ScalarType torch_dtype(const DeviceChoice& device) {
  switch (device.dtype) {
    case RunDtype::Bf16: return c10::ScalarType::BFloat16;
    case RunDtype::F16: return c10::ScalarType::Half;
    default: return c10::ScalarType::Float;
  }
}

}  // namespace kvs
