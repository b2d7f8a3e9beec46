#include "app/train/train_options.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <sstream>

#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/torch_device.h"

namespace kvs::train_app {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted = true; }

}  // namespace

std::set<std::string> with_common_options(std::set<std::string> own) {
  for (const char* o : {"--work", "--steps", "--batch", "--seed", "--lr", "--warmup", "--min-lr-ratio",
                        "--weight-decay", "--grad-clip", "--log-every", "--eval-every", "--checkpoint-every",
                        "--threads", "--render-threads", "--device", "--stop-after-minutes"})
    own.insert(o);
  for (const char* o : kWorldDataOptions) own.insert(o);
  return own;
}

std::set<std::string> with_common_flags(std::set<std::string> own) {
  own.insert("--resume");
  own.insert("--help");
  return own;
}

std::string common_options_help(const RecipeDefaults& d) {
  std::ostringstream s;
  s << "  --work DIR              work folder (runs in DIR/<kind>, rendered images in DIR/data)\n"
    << "  --steps N               optimisation steps (default " << d.steps << ")\n"
    << "  --batch B               batch size (default " << d.batch << ")\n"
    << "  --seed S                seed of init, batches and augmentation (default 0)\n"
    << "  --lr X                  peak learning rate (default " << d.lr << "), linear warm-up then cosine\n"
    << "  --warmup N              warm-up steps (default " << d.warmup << ")\n"
    << "  --min-lr-ratio X        final lr / peak lr (default 0.1)\n"
    << "  --weight-decay X        AdamW decoupled weight decay (default " << d.weight_decay << ")\n"
    << "  --grad-clip X           global gradient-norm clip, 0 = off (default " << d.grad_clip << ")\n"
    << "  --log-every N           loss-log period in steps (default " << d.log_every << ")\n"
    << "  --eval-every N          held-out evaluation period (default " << d.eval_every << ")\n"
    << "  --checkpoint-every N    checkpoint period (default " << d.checkpoint_every << ")\n"
    << "  --resume                continue the checkpoint in the run folder\n"
    << "  --stop-after-minutes M  checkpoint and stop after M minutes (continue with --resume)\n"
    << "  --threads N             CPU threads for torch (default 1, so other work keeps a core)\n"
    << "  --render-threads N      threads rendering world images (default: --threads)\n"
    << "  --device D              cpu | cuda | cuda:N | auto (default cpu; cuda is cuda:0)\n";
  return s.str();
}

training::TrainOptions parse_train_options(const cli::ArgParser& p, const RecipeDefaults& d,
                                           const std::string& command_line) {
  training::TrainOptions o;
  o.work_dir = p.require("--work");
  o.steps = p.get_int("--steps", d.steps);
  o.batch = p.get_int("--batch", d.batch);
  o.seed = p.get_u64("--seed", 0);
  o.lr = p.get_double("--lr", d.lr);
  o.warmup_steps = p.get_int("--warmup", d.warmup);
  o.min_lr_ratio = p.get_double("--min-lr-ratio", 0.1);
  o.adamw.weight_decay = p.get_double("--weight-decay", d.weight_decay);
  o.grad_clip = p.get_double("--grad-clip", d.grad_clip);
  o.log_every = p.get_int("--log-every", d.log_every);
  o.eval_every = p.get_int("--eval-every", d.eval_every);
  o.checkpoint_every = p.get_int("--checkpoint-every", d.checkpoint_every);
  o.resume = p.flag("--resume");
  o.stop_after_minutes = p.get_double("--stop-after-minutes", 0);
  if (o.steps < 1 || o.batch < 1) throw InvalidArgumentError("--steps and --batch must be at least 1");
  if (o.lr <= 0) throw InvalidArgumentError("--lr must be positive");
  const int threads = static_cast<int>(p.get_int("--threads", 1));
  if (threads < 1) throw InvalidArgumentError("--threads must be at least 1");
  const DeviceChoice device = choose_device(parse_device(p.get("--device", "cpu")), threads);
  o.device = torch_device(device);
  o.render_threads = static_cast<int>(p.get_int("--render-threads", threads));
  o.command = command_line;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  o.stop_requested = [] { return g_interrupted.load(); };
  std::printf("device: %s\n", device.description.c_str());
  return o;
}

WorldDataOptions parse_world_data_options(const cli::ArgParser& p, const WorldDataOptions& d) {
  WorldDataOptions w;
  w.train_per_class = p.get_int("--train-per-class", d.train_per_class);
  w.eval_per_class = p.get_int("--eval-per-class", d.eval_per_class);
  if (w.train_per_class < 1 || w.eval_per_class < 1)
    throw InvalidArgumentError("--train-per-class and --eval-per-class must be at least 1");
  return w;
}

std::string world_data_help(const std::string& what_eval_is_for, const WorldDataOptions& d) {
  std::ostringstream s;
  s << "  --train-per-class N      training images per class (default " << d.train_per_class << ")\n"
    << "  --eval-per-class N       held-out images per class for " << what_eval_is_for << " (default "
    << d.eval_per_class << ")\n";
  return s.str();
}

std::string input_run_dir(const cli::ArgParser& p, const std::string& option, const training::TrainOptions& o,
                          const std::string& kind) {
  return p.get(option, training::run_dir(o, kind));
}

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int64_t> out;
  std::string item;
  std::istringstream s(text);
  while (std::getline(s, item, ',')) out.push_back(cli::parse_int(option, item));
  if (out.empty()) throw InvalidArgumentError("option " + option + " expects a comma-separated list of integers");
  return out;
}

std::string summary_line(const std::string& kind, const training::TrainSummary& s) {
  std::ostringstream out;
  out << kind << ": steps " << s.first_step << " -> " << s.last_step << (s.finished ? " (finished)" : " (stopped)")
      << " in " << static_cast<int64_t>(s.seconds) << " s, " << static_cast<int64_t>(s.mean_step_ms) << " ms/step";
  return out.str();
}

int finish_training(const std::string& kind, const training::TrainSummary& s, const std::string& eval_label,
                    int decimals, const std::string& unit) {
  std::printf("%s\n", summary_line(kind, s).c_str());
  if (!s.final_eval.empty()) std::printf("%s: %.*f%s\n", eval_label.c_str(), decimals, s.final_eval[0], unit.c_str());
  return s.finished ? 0 : 130;
}

}  // namespace kvs::train_app
