#pragma once
// Learning-rate schedule of the training tool: linear warm-up from 0 to `peak`
// over `warmup_steps`, then a cosine decay to `peak * min_ratio` at `total_steps`
// (constant after). Step numbers are 0-based (the step about to be taken).
#include <cstdint>

namespace kvs::training {

struct LrSchedule {
  double peak = 1e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_ratio = 0.1;

  double at(int64_t step) const;
};

}  // namespace kvs::training
