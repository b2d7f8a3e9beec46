// Device memory for the gauges: CPU runs report none (and say so); a CUDA query
// never throws, and on a machine with a GPU it reports the allocator's numbers.
#include <gtest/gtest.h>

#include "engine/core/device.h"
#include "engine/metrics/device_memory.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

namespace kvs {
namespace {

TEST(DeviceMemory, CpuRunsReportNoDeviceMemory) {
  const DeviceMemoryStats s = device_memory_stats(-1);
  EXPECT_FALSE(s.available);
  EXPECT_EQ(s.note, "CPU run");
  reset_device_memory_peak(-1);  // a no-op, not an error
}

TEST(DeviceMemory, CudaQueryNeverThrows) {
  DeviceMemoryStats s;
  EXPECT_NO_THROW(s = device_memory_stats(0));
  if (cuda_available()) {
    EXPECT_TRUE(s.available) << s.note;
    EXPECT_GT(s.total_bytes, 0);
    EXPECT_GE(s.reserved_bytes, s.allocated_bytes);
    EXPECT_GE(s.peak_allocated_bytes, s.allocated_bytes);
  } else {
    EXPECT_FALSE(s.available);
    EXPECT_FALSE(s.note.empty());
  }
  EXPECT_FALSE(device_memory_stats(1000).available);
  EXPECT_NO_THROW(reset_device_memory_peak(1000));
}

// Unit events carry device memory exactly when the run is on a GPU.
TEST(DeviceMemory, UnitEventsCarryItOnGpuRunsOnly) {
  test::TempDir dir;
  llamagen::write_random_llamagen_bundle(dir.file("m"), "tiny", test::tiny_gqa_gpt(), test::tiny_vq(), 1);
  struct Sink : EventSink {
    int units = 0, with_device = 0;
    void on_event(const GenerationEvent& e) override {
      if (const auto* u = std::get_if<UnitDoneEvent>(&e)) {
        ++units;
        if (u->device_memory && u->device_memory->available) ++with_device;
      }
    }
  };
  for (const char* device : {"cpu", "cuda"}) {
    if (std::string(device) == "cuda" && !cuda_available()) continue;
    GenerationRequest r;
    r.model_path = dir.file("m");
    r.class_ids = {1};
    r.threads = 1;
    r.device = device;
    Sink sink;
    GenerationSession().run(r, &sink);
    EXPECT_GT(sink.units, 0);
    EXPECT_EQ(sink.with_device, std::string(device) == "cuda" ? sink.units : 0) << device;
  }
}

}  // namespace
}  // namespace kvs
