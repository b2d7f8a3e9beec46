#pragma once
// The one training loop every trainer runs (VQ, GPT, classifier; later VAR and
// MAR): seeded per-step randomness, AdamW with warm-up + cosine learning rate and
// gradient clipping, loss-curve logging, periodic evaluation, resumable
// checkpoints in the run folder (WORK/<kind>).
//
// Randomness: step s draws from a generator seeded with mix(seed, s), so a run
// resumed from a checkpoint at step s continues with exactly the batches, dropouts
// and augmentations the uninterrupted run would have used.
#include <nlohmann/json.hpp>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/training/adamw.h"
#include "engine/training/parameter_set.h"

namespace kvs::training {

struct TrainOptions {
  std::string work_dir;  // runs live in WORK/<kind>; rendered data in WORK/data
  int64_t steps = 1000;
  int64_t batch = 16;
  uint64_t seed = 0;
  double lr = 1e-4;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;
  AdamWOptions adamw;
  double grad_clip = 1.0;  // <= 0: off
  int64_t log_every = 10;
  int64_t eval_every = 500;        // <= 0: only at the end
  int64_t checkpoint_every = 500;  // <= 0: only at the end
  bool resume = false;
  double stop_after_minutes = 0;  // > 0: checkpoint and stop after this long (resume later)
  at::Device device = at::kCPU;
  int render_threads = 1;                // world rendering workers
  std::string command;                   // the command line, kept in the checkpoint for provenance
  std::function<bool()> stop_requested;  // polled between steps (e.g. SIGINT): checkpoint and stop
};

struct StepResult {
  at::Tensor loss;              // scalar with an autograd graph
  std::vector<double> metrics;  // TrainingTask::metric_names, in order
};

struct TrainingTask {
  std::string kind;  // run folder name and checkpoint "kind": vq, gpt, classifier
  ParameterSet* params = nullptr;
  nlohmann::json config;  // must match on resume
  std::vector<std::string> metric_names;
  std::function<StepResult(int64_t step, at::Generator& gen)> step;
  std::vector<std::string> eval_names;
  std::function<std::vector<double>()> evaluate;
  // Called after every optimizer update with the step just taken (e.g. an EMA of the weights).
  std::function<void(int64_t step)> after_update;
  // Called after each checkpoint with the run folder (extra artefacts, e.g. the classifier file).
  std::function<void(const std::string& run_dir)> on_checkpoint;
};

struct TrainSummary {
  int64_t first_step = 0, last_step = 0;  // steps run in this call: [first_step, last_step)
  bool finished = false;                  // reached options.steps
  double seconds = 0;                     // wall time of this call
  double mean_step_ms = 0;
  std::vector<double> final_eval;  // eval_names at the end (empty if none ran)
};

std::string run_dir(const TrainOptions& options, const std::string& kind);

// A generator for (seed, step, stream): independent streams per purpose.
at::Generator step_generator(uint64_t seed, int64_t step, uint64_t stream = 0);

TrainSummary run_training(const TrainOptions& options, TrainingTask& task);

}  // namespace kvs::training
