#pragma once
// Options every training subcommand shares (work folder, steps, batch, seed,
// optimiser, logging, checkpoints, threads, device) and their parsing.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "app/cli/arg_parser.h"
#include "engine/training/training_loop.h"

namespace kvs::train_app {

// A subcommand's recipe: the defaults its options start from.
struct RecipeDefaults {
  int64_t steps = 1000;
  int64_t batch = 16;
  double lr = 1e-4;
  int64_t warmup = 100;
  double weight_decay = 0.05;
  int64_t log_every = 10;
  int64_t eval_every = 500;
  int64_t checkpoint_every = 250;
  double grad_clip = 1.0;
};

// The tokenizers' recipe (vq, var-vae; kl-vae without weight decay): the demo
// recipes' 5,000 steps of batch 8 (README "Training the demo models").
inline constexpr RecipeDefaults kTokenizerRecipe{.steps = 5000,
                                                 .batch = 8,
                                                 .lr = 1e-3,
                                                 .warmup = 100,
                                                 .weight_decay = 0.05,
                                                 .log_every = 50,
                                                 .eval_every = 500,
                                                 .checkpoint_every = 250};

// The world images a command trains on and evaluates with
// (--train-per-class, --eval-per-class), shared by every trainer.
struct WorldDataOptions {
  int64_t train_per_class = 1000;
  int64_t eval_per_class = 20;
};
inline constexpr const char* kWorldDataOptions[] = {"--train-per-class", "--eval-per-class"};
WorldDataOptions parse_world_data_options(const cli::ArgParser& p, const WorldDataOptions& defaults = {});
// `what_eval_is_for`: e.g. "the PSNR curve" or "the held-out loss".
std::string world_data_help(const std::string& what_eval_is_for, const WorldDataOptions& defaults = {});
// Copies --train-per-class / --eval-per-class into a trainer's setup.
template <class Setup>
void read_world_data_options(const cli::ArgParser& p, Setup& setup) {
  const WorldDataOptions data = parse_world_data_options(p);
  setup.train_per_class = data.train_per_class;
  setup.eval_per_class = data.eval_per_class;
}

// A run folder the command reads (the tokenizer / VAE it builds on): OPTION DIR,
// default WORK/<kind>.
std::string input_run_dir(const cli::ArgParser& p, const std::string& option, const training::TrainOptions& o,
                          const std::string& kind);

// The shared value options (with the world-data options) / flags, plus the command's own.
std::set<std::string> with_common_options(std::set<std::string> own);
std::set<std::string> with_common_flags(std::set<std::string> own);
// Help text of the shared options with the recipe's defaults.
std::string common_options_help(const RecipeDefaults& d);

// Applies --threads (default 1: training must leave the other cores to the user)
// and --device, installs the Ctrl-C handler (checkpoint, then stop).
training::TrainOptions parse_train_options(const cli::ArgParser& p, const RecipeDefaults& d,
                                           const std::string& command_line);

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text);
std::string summary_line(const std::string& kind, const training::TrainSummary& s);
// Prints the summary line and the final held-out value ("<eval_label>: <value><unit>"
// with `decimals` digits) and returns the command's exit code (130: stopped early).
int finish_training(const std::string& kind, const training::TrainSummary& s, const std::string& eval_label,
                    int decimals, const std::string& unit = "");

}  // namespace kvs::train_app
