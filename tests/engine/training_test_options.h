#pragma once
// The short run the training tests share: `steps` steps at batch 2, logging every
// step, no evaluation or periodic checkpoints, and stopping itself after
// `stop_at` steps (0: never; counted in *steps_run) so that a test can resume it.
#include <cstdint>
#include <string>

#include "engine/training/training_loop.h"

namespace kvs::test {

inline training::TrainOptions tiny_train_options(const std::string& work, int64_t stop_at, bool resume,
                                                 int64_t* steps_run, uint64_t seed = 5, double lr = 3e-3,
                                                 int64_t steps = 6) {
  training::TrainOptions o;
  o.work_dir = work;
  o.steps = steps;
  o.batch = 2;
  o.seed = seed;
  o.lr = lr;
  o.warmup_steps = 2;
  o.log_every = 1;
  o.eval_every = 0;
  o.checkpoint_every = 0;
  o.resume = resume;
  o.stop_requested = [steps_run, stop_at] { return stop_at > 0 && ++*steps_run >= stop_at; };
  return o;
}

}  // namespace kvs::test
