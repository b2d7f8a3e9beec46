// Device names (--device, the window's menu): parsing "auto|cpu|cuda|cuda:N", the
// menu model built from a list of GPUs, and the errors for a GPU that is absent.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/device.h"
#include "engine/core/device_menu.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

TEST(DeviceNames, ParseEveryForm) {
  EXPECT_EQ(parse_device("auto").kind, DeviceKind::Auto);
  EXPECT_EQ(parse_device("cpu").kind, DeviceKind::Cpu);
  EXPECT_EQ(parse_device("cuda").kind, DeviceKind::Cuda);
  EXPECT_EQ(parse_device("cuda").cuda_index, -1);
  EXPECT_EQ(parse_device("cuda:0").kind, DeviceKind::Cuda);
  EXPECT_EQ(parse_device("cuda:0").cuda_index, 0);
  EXPECT_EQ(parse_device("cuda:3").cuda_index, 3);
  EXPECT_EQ(parse_device("cuda:17").cuda_index, 17);
  EXPECT_EQ(parse_device_kind("cuda:1"), DeviceKind::Cuda);
  for (const char* name : {"auto", "cpu", "cuda", "cuda:0", "cuda:12"})
    EXPECT_EQ(device_spec_name(parse_device(name)), name);
}

TEST(DeviceNames, RefuseMalformedNames) {
  for (const char* name : {"", "tpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:01", "cuda:1.5", "cuda:1024",
                           "cuda:99999", "cuda1", "cpu:0"}) {
    try {
      parse_device(name);
      ADD_FAILURE() << "accepted '" << name << "'";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("unknown device '" + std::string(name) + "'"), std::string::npos)
          << e.what();
    }
  }
  try {
    parse_device("tpu");
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:N"), std::string::npos) << e.what();
  }
}

TEST(DeviceNames, AbsentGpuIsRefusedWithTheCountPresent) {
  const int present = static_cast<int>(cuda_devices().size());
  const std::string asked = "cuda:" + std::to_string(present);
  try {
    choose_device(parse_device(asked), 1);
    ADD_FAILURE() << asked << " was accepted";
  } catch (const DeviceError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--device " + asked + " requested but"), std::string::npos) << message;
    if (present == 0) {
      EXPECT_NE(message.find("no CUDA device is available"), std::string::npos) << message;
    } else if (present == 1) {
      EXPECT_NE(message.find("only 1 CUDA device is present"), std::string::npos) << message;
    } else {
      EXPECT_NE(message.find("only " + std::to_string(present) + " CUDA devices are present"), std::string::npos)
          << message;
    }
  }
  // Every GPU listed is a device a run can choose, with its index.
  for (const CudaDeviceInfo& gpu : cuda_devices()) {
    const DeviceChoice choice = choose_device(parse_device("cuda:" + std::to_string(gpu.index)), 1);
    EXPECT_EQ(choice.kind, DeviceKind::Cuda);
    EXPECT_EQ(choice.cuda_index, gpu.index);
    EXPECT_EQ(choice.description.rfind("cuda:" + std::to_string(gpu.index) + " (", 0), 0u) << choice.description;
  }
  // The CPU is always there.
  EXPECT_EQ(choose_device(parse_device("cpu"), 1).kind, DeviceKind::Cpu);
}

TEST(DeviceMenu, WithoutGpusListsAutomaticAndCpu) {
  const auto entries = device_menu_entries({});
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].value, "auto");
  EXPECT_EQ(entries[0].label, "Automatic");
  EXPECT_NE(entries[0].tooltip.find("no GPU was found"), std::string::npos) << entries[0].tooltip;
  EXPECT_EQ(entries[1].value, "cpu");
  EXPECT_EQ(entries[1].label, "CPU");
  // Saved settings naming a GPU this machine lacks fall back to automatic.
  EXPECT_EQ(device_menu_index(entries, "cpu"), 1);
  EXPECT_EQ(device_menu_index(entries, "auto"), 0);
  EXPECT_EQ(device_menu_index(entries, "cuda"), 0);
  EXPECT_EQ(device_menu_index(entries, "cuda:1"), 0);
  EXPECT_EQ(device_menu_index(entries, "nonsense"), 0);
}

TEST(DeviceMenu, OneEntryPerGpuWithItsNameAndMemory) {
  const int64_t gib = int64_t{1} << 30;
  const std::vector<CudaDeviceInfo> gpus{{0, "NVIDIA H100 80GB HBM3", 80 * gib},
                                         {1, "NVIDIA GeForce RTX 4090", 24 * gib},
                                         {2, "CUDA device 2", 0}};
  const auto entries = device_menu_entries(gpus);
  ASSERT_EQ(entries.size(), 5u);
  EXPECT_EQ(entries[0].value, "auto");
  EXPECT_NE(entries[0].tooltip.find("GPU 0, NVIDIA H100 80GB HBM3"), std::string::npos) << entries[0].tooltip;
  EXPECT_EQ(entries[1].value, "cpu");
  EXPECT_EQ(entries[2].value, "cuda:0");
  EXPECT_EQ(entries[2].label, "GPU 0: NVIDIA H100 80GB HBM3 (80.0 GiB)");
  EXPECT_EQ(entries[3].value, "cuda:1");
  EXPECT_EQ(entries[3].label, "GPU 1: NVIDIA GeForce RTX 4090 (24.0 GiB)");
  EXPECT_EQ(entries[4].value, "cuda:2");
  EXPECT_EQ(entries[4].label, "GPU 2: CUDA device 2");  // memory unknown: not shown
  // Every entry's value is a device name --device accepts, naming the same GPU.
  for (size_t i = 2; i < entries.size(); ++i)
    EXPECT_EQ(parse_device(entries[i].value).cuda_index, static_cast<int>(i) - 2);
  EXPECT_EQ(device_menu_index(entries, "cuda"), 2);  // "cuda" is GPU 0
  EXPECT_EQ(device_menu_index(entries, "cuda:1"), 3);
  EXPECT_EQ(device_menu_index(entries, "cuda:2"), 4);
  EXPECT_EQ(device_menu_index(entries, "cuda:3"), 0);
}

TEST(DeviceMenu, FormatsGibibytes) {
  EXPECT_EQ(format_gibibytes(0), "");
  EXPECT_EQ(format_gibibytes(int64_t{3} << 29), "1.5 GiB");
}

}  // namespace
}  // namespace kvs
