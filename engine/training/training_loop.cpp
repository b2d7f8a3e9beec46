#include "engine/training/training_loop.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/training/checkpoint.h"
#include "engine/training/loss_log.h"
#include "engine/training/lr_schedule.h"

namespace kvs::training {
namespace {

const ModuleLog& log() {
  static const ModuleLog logger = module_logger("train");
  return logger;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

std::string run_dir(const TrainOptions& options, const std::string& kind) {
  return (std::filesystem::path(options.work_dir) / kind).string();
}

at::Generator step_generator(uint64_t seed, int64_t step, uint64_t stream) {
  return at::detail::createCPUGenerator(
      splitmix64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(step)) ^ (stream * 0xD1B54A32D192ED03ULL)));
}

TrainSummary run_training(const TrainOptions& options, TrainingTask& task) {
  if (!task.params || !task.step) throw InvalidArgumentError("training task '" + task.kind + "' is incomplete");
  if (options.steps < 1 || options.batch < 1) throw InvalidArgumentError("--steps and --batch must be at least 1");
  const std::string dir = run_dir(options, task.kind);
  AdamW optimizer(*task.params, options.adamw);

  int64_t start = 0;
  nlohmann::json history = nlohmann::json::array();
  double previous_seconds = 0;
  const auto existing = read_checkpoint_manifest(dir);
  if (existing && !options.resume)
    throw InvalidArgumentError("folder " + dir + " already holds a checkpoint (step " +
                               std::to_string(existing->value("step", 0)) +
                               "): pass --resume to continue it, or choose another --work folder");
  if (existing) {
    const nlohmann::json manifest = load_checkpoint(dir, *task.params, &optimizer);
    if (manifest.value("kind", "") != task.kind || manifest.value("config", nlohmann::json()) != task.config)
      throw InvalidArgumentError("folder " + dir + ": the checkpoint was trained with another configuration (" +
                                 manifest.value("config", nlohmann::json()).dump() + "); resume with the same options");
    if (manifest.value("seed", uint64_t{0}) != options.seed)
      throw InvalidArgumentError("folder " + dir + ": the checkpoint used --seed " +
                                 std::to_string(manifest.value("seed", uint64_t{0})) + "; resume with the same seed");
    start = manifest.value("step", int64_t{0});
    history = manifest.value("commands", nlohmann::json::array());
    previous_seconds = manifest.value("train_seconds", 0.0);
    log().info(task.kind + ": resuming from step " + std::to_string(start) + " (" + dir + ")");
  }
  history.push_back({{"command", options.command}, {"from_step", start}, {"to_step", options.steps}});
  std::filesystem::create_directories(dir);

  std::vector<std::string> columns = {"loss"};
  for (const auto& m : task.metric_names) columns.push_back(m);
  columns.insert(columns.end(), {"lr", "grad_norm", "step_ms"});
  for (const auto& e : task.eval_names) columns.push_back("eval_" + e);
  LossLog loss_log((std::filesystem::path(dir) / "loss.csv").string(), columns, existing ? start : -1);

  const LrSchedule schedule{options.lr, options.warmup_steps, options.steps, options.min_lr_ratio};
  const auto t_call = Clock::now();
  TrainSummary summary;
  summary.first_step = start;
  std::vector<double> sums(columns.size() - task.eval_names.size(), 0.0);
  int64_t in_window = 0;
  double step_ms_total = 0;

  auto save = [&](int64_t step_done) {
    nlohmann::json meta = {{"kind", task.kind},
                           {"config", task.config},
                           {"seed", options.seed},
                           {"total_steps", options.steps},
                           {"batch", options.batch},
                           {"lr", options.lr},
                           {"warmup_steps", options.warmup_steps},
                           {"commands", history},
                           {"train_seconds", previous_seconds + seconds_since(t_call)}};
    save_checkpoint(dir, *task.params, &optimizer, step_done, meta);
    if (task.on_checkpoint) task.on_checkpoint(dir);
    log().info(task.kind + ": checkpoint at step " + std::to_string(step_done) + " in " + dir);
  };
  auto run_eval = [&](int64_t step_done) {
    if (!task.evaluate) return;
    std::vector<double> values = task.evaluate();
    summary.final_eval = values;
    std::vector<double> row(columns.size(), std::nan(""));
    for (size_t i = 0; i < values.size(); ++i) row[columns.size() - task.eval_names.size() + i] = values[i];
    loss_log.append(step_done, row);
    std::vector<std::string> names;
    for (const auto& e : task.eval_names) names.push_back("eval " + e);
    log().info(task.kind + ": " + format_log_line(step_done, options.steps, names, values));
  };

  int64_t step = start;
  for (; step < options.steps; ++step) {
    const auto t0 = Clock::now();
    at::Generator gen = step_generator(options.seed, step);
    const double lr = schedule.at(step);
    task.params->zero_grad();
    StepResult r = task.step(step, gen);
    r.loss.backward();
    const double grad_norm = options.grad_clip > 0 ? clip_grad_norm(*task.params, options.grad_clip) : std::nan("");
    optimizer.step(lr);
    if (task.after_update) task.after_update(step);
    const double loss = r.loss.item<double>();
    if (!std::isfinite(loss))
      throw Error(task.kind + ": loss is " + std::to_string(loss) + " at step " + std::to_string(step) +
                  " (lower --lr or resume from the last checkpoint)");
    const double ms = seconds_since(t0) * 1000.0;
    step_ms_total += ms;
    std::vector<double> values = {loss};
    values.insert(values.end(), r.metrics.begin(), r.metrics.end());
    values.insert(values.end(), {lr, grad_norm, ms});
    for (size_t i = 0; i < sums.size() && i < values.size(); ++i) sums[i] += values[i];
    ++in_window;
    const int64_t done = step + 1;
    if (done % std::max<int64_t>(1, options.log_every) == 0 || done == options.steps) {
      std::vector<double> means(columns.size(), std::nan(""));
      for (size_t i = 0; i < sums.size(); ++i) means[i] = sums[i] / in_window;
      loss_log.append(done, means);
      std::vector<std::string> names(columns.begin(), columns.begin() + static_cast<long>(sums.size()));
      std::vector<double> shown(means.begin(), means.begin() + static_cast<long>(sums.size()));
      log().info(task.kind + ": " + format_log_line(done, options.steps, names, shown));
      std::fill(sums.begin(), sums.end(), 0.0);
      in_window = 0;
    }
    const bool last = done == options.steps;
    if (last || (options.eval_every > 0 && done % options.eval_every == 0)) run_eval(done);
    const bool out_of_time = options.stop_after_minutes > 0 && seconds_since(t_call) > options.stop_after_minutes * 60;
    const bool stop = out_of_time || (options.stop_requested && options.stop_requested());
    if (last || stop || (options.checkpoint_every > 0 && done % options.checkpoint_every == 0)) save(done);
    if (stop && !last) {
      log().warn(task.kind + ": stopped at step " + std::to_string(done) + " (" +
                 (out_of_time ? "time limit" : "interrupted") + "); continue with --resume");
      step = done;
      break;
    }
  }
  if (step == start && start >= options.steps)
    log().info(task.kind + ": already trained to step " + std::to_string(start));
  summary.last_step = std::min(step, options.steps);
  summary.finished = summary.last_step >= options.steps;
  summary.seconds = seconds_since(t_call);
  summary.mean_step_ms = summary.last_step > start ? step_ms_total / static_cast<double>(summary.last_step - start) : 0;
  return summary;
}

}  // namespace kvs::training
