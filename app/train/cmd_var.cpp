// kvstudio-train var: VAR's class-conditional next-scale transformer on tokenised world images.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/models/var/var_random_init.h"
#include "engine/training/var/var_trainer.h"
#include "engine/training/world_dataset.h"

namespace kvs::train_app {
namespace {

constexpr RecipeDefaults kRecipe{.steps = 2000,
                                 .batch = 8,
                                 .lr = 5e-4,
                                 .warmup = 100,
                                 .weight_decay = 0.05,
                                 .log_every = 20,
                                 .eval_every = 400,
                                 .checkpoint_every = 100};

}  // namespace

int cmd_var(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   with_common_options(
                       {"--vae", "--depth", "--dim", "--heads", "--mlp-ratio", "--cond-drop", "--alng"}),
                   with_common_flags({}), 0);
  const var::VarConfig demo = var::demo_var_config();
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train var --work DIR [options]\n"
        "  Trains VAR's class-conditional next-scale transformer (teacher forcing over all scales)\n"
        "  on the world's images, tokenised by the trained VQVAE (ids cached in DIR/var).\n"
        "  Defaults: the var-demo preset (depth 6, width 256, 4 heads).\n"
        "  --vae DIR                VQVAE run folder (default WORK/var-vae)\n"
        "  --depth N                blocks (default 6)\n"
        "  --dim N                  width C (default 256)\n"
        "  --heads N                attention heads (default 4)\n"
        "  --mlp-ratio X            FFN width / C (default 4)\n"
        "  --cond-drop X            label -> null class probability, for CFG (default 0.1)\n"
        "  --alng X                 AdaLN gamma init multiplier (default 1e-3, upstream's recipes)\n"
        "%s%s",
        world_data_help("the held-out loss").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::VarTrainSetup setup;
  setup.vae_run_dir = input_run_dir(p, "--vae", options, "var-vae");
  var::VarConfig& c = setup.model;
  c = demo;
  c.depth = p.get_int("--depth", demo.depth);
  c.embed_dim = p.get_int("--dim", demo.embed_dim);
  c.num_heads = p.get_int("--heads", demo.num_heads);
  c.mlp_ratio = p.get_double("--mlp-ratio", demo.mlp_ratio);
  c.num_classes = training::world_class_count();
  setup.cond_drop_rate = p.get_double("--cond-drop", 0.1);
  setup.init_adaln_gamma = p.get_double("--alng", 1e-3);
  read_world_data_options(p, setup);
  // vocab_size, Cvae and patch_nums follow the VQVAE checkpoint.
  training::fit_var_to_tokenizer(setup);
  const training::TrainSummary s = training::train_var(options, setup);
  return finish_training("var", s, "held-out token loss", 4);
}

}  // namespace kvs::train_app
