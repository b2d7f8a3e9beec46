#include "engine/training/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace kvs::training {

double LrSchedule::at(int64_t step) const {
  if (warmup_steps > 0 && step < warmup_steps) return peak * static_cast<double>(step + 1) / warmup_steps;
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps);
  const double progress = std::clamp(static_cast<double>(step - warmup_steps) / decay_steps, 0.0, 1.0);
  const double floor = peak * min_ratio;
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace kvs::training
