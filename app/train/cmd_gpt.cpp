// kvstudio-train gpt: LlamaGen's class-conditional GPT on tokenised world images.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/training/llamagen/gpt_trainer.h"
#include "engine/training/world_dataset.h"

namespace kvs::train_app {
namespace {

constexpr RecipeDefaults kRecipe{.steps = 1600,
                                 .batch = 8,
                                 .lr = 8e-4,
                                 .warmup = 100,
                                 .weight_decay = 0.05,
                                 .log_every = 20,
                                 .eval_every = 400,
                                 .checkpoint_every = 100};

}  // namespace

int cmd_gpt(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, with_common_options({"--vq", "--dim", "--layers", "--heads", "--class-dropout"}),
                   with_common_flags({}), 0);
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train gpt --work DIR [options]\n"
        "  Trains LlamaGen's class-conditional GPT on the world's images, tokenised by the\n"
        "  trained tokenizer (codes cached in DIR/gpt).\n"
        "  --vq DIR                 tokenizer run folder (default WORK/vq)\n"
        "  --dim N                  model width (default 256)\n"
        "  --layers N               transformer layers (default 6)\n"
        "  --heads N                attention heads (default 8)\n"
        "  --class-dropout X        label -> null class probability, for CFG (default 0.1)\n"
        "%s%s",
        world_data_help("the held-out loss").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::GptTrainSetup setup;
  setup.vq_run_dir = input_run_dir(p, "--vq", options, "vq");
  llamagen::GptConfig& c = setup.model;
  c.dim = p.get_int("--dim", 256);
  c.n_layer = p.get_int("--layers", 6);
  c.n_head = p.get_int("--heads", 8);
  c.class_dropout_prob = p.get_double("--class-dropout", 0.1);
  c.num_classes = training::world_class_count();
  read_world_data_options(p, setup);
  // vocab_size and block_size follow the tokenizer: read from its checkpoint by the trainer.
  training::fit_gpt_to_tokenizer(setup);
  const training::TrainSummary s = training::train_gpt(options, setup);
  return finish_training("gpt", s, "held-out token loss", 4);
}

}  // namespace kvs::train_app
