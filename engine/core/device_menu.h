#pragma once
// The device menu of the window, as plain data: "auto" first, the CPU, then one
// entry per GPU with its name and memory. Torch-free (header and source): the
// GPUs are passed in (cuda_devices() in engine/core/device.h lists them), so the
// menu can be built and tested without LibTorch or a GPU.
#include <string>
#include <vector>

#include "engine/core/device.h"

namespace kvs {

struct DeviceMenuEntry {
  std::string value;    // what --device and GenerationRequest::device take: "auto", "cpu", "cuda:N"
  std::string label;    // what the menu shows
  std::string tooltip;  // a sentence about the entry
};

// auto, cpu, then cuda:0, cuda:1, ... in the order of `gpus`.
std::vector<DeviceMenuEntry> device_menu_entries(const std::vector<CudaDeviceInfo>& gpus);

// The entry for a device name (a saved setting, a --device value): the exact
// value; "cuda" (any GPU) is cuda:0's entry; a name that is not in the menu
// (a GPU this machine does not have, an unknown name) is auto's, index 0.
int device_menu_index(const std::vector<DeviceMenuEntry>& entries, const std::string& value);

// "79.2 GiB" (one decimal), for the labels; "" for 0 bytes (unknown).
std::string format_gibibytes(int64_t bytes);

}  // namespace kvs
