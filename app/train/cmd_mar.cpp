// kvstudio-train mar: MAR (masked autoregression with a diffusion head) on KL-VAE latents of world images.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/training/mar/mar_trainer.h"
#include "engine/training/world_dataset.h"

namespace kvs::train_app {
namespace {

// Upstream's optimiser (main_mar.py: AdamW (0.9, 0.95), weight decay 0.02, grad clip 3)
// with the demo's step count, batch and learning rate (app/train/mar_demo_recipe.sh).
constexpr RecipeDefaults kRecipe{.steps = 4000,
                                 .batch = 16,
                                 .lr = 5e-4,
                                 .warmup = 200,
                                 .weight_decay = 0.02,
                                 .log_every = 20,
                                 .eval_every = 1000,
                                 .checkpoint_every = 200,
                                 .grad_clip = 3.0};

}  // namespace

int cmd_mar(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   with_common_options({"--vae", "--dim", "--depth", "--heads", "--buffer", "--head-depth",
                                        "--head-width", "--mask-ratio-min", "--label-drop", "--diffusion-batch-mul",
                                        "--ema", "--num-sampling-steps"}),
                   with_common_flags({"--no-flip"}), 0);
  const mar::MarConfig demo = mar::demo_mar_config();
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train mar --work DIR [options]\n"
        "  Trains MAR (random-order masked autoregression, bidirectional encoder-decoder, per-token\n"
        "  diffusion loss) on the scaled latents of the trained KL VAE (moments cached in DIR/mar).\n"
        "  Defaults: the mar-demo preset (encoder and decoder 2 blocks of width 128, 16 buffer tokens,\n"
        "  diffusion head 3 x 256).\n"
        "  --vae DIR                KL VAE run folder (default WORK/kl-vae)\n"
        "  --dim N                  encoder and decoder width (default 128)\n"
        "  --depth N                encoder and decoder blocks each (default 2)\n"
        "  --heads N                attention heads (default 4)\n"
        "  --buffer N               class-embedding buffer positions (default 16; upstream 64)\n"
        "  --head-depth N           diffusion head residual blocks (default 3)\n"
        "  --head-width N           diffusion head width (default 256)\n"
        "  --mask-ratio-min X       lower end of the mask-ratio distribution (default 0.7)\n"
        "  --label-drop X           class -> fake latent probability, for CFG (default 0.1)\n"
        "  --diffusion-batch-mul N  diffusion-loss draws per token (default 4)\n"
        "  --ema X                  EMA rate of the shipped weights, 0 = off (default 0.999)\n"
        "  --num-sampling-steps S   the head's sampling respacing stored in the model (default ddim25:\n"
        "                           t = 0, 40, .., 960; \"25\" keeps t = 999, where a briefly trained head's\n"
        "                           error is amplified ~1300x: see engine/models/mar/mar_random_init.h)\n"
        "  --no-flip                never use the mirrored images' latents\n"
        "%s%s",
        world_data_help("the held-out loss").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::MarTrainSetup setup;
  setup.vae_run_dir = input_run_dir(p, "--vae", options, "kl-vae");
  mar::MarConfig& c = setup.model;
  c = demo;
  c.encoder_embed_dim = c.decoder_embed_dim = p.get_int("--dim", demo.encoder_embed_dim);
  c.encoder_depth = c.decoder_depth = p.get_int("--depth", demo.encoder_depth);
  c.encoder_num_heads = c.decoder_num_heads = p.get_int("--heads", demo.encoder_num_heads);
  c.buffer_size = p.get_int("--buffer", demo.buffer_size);
  c.diffloss_d = p.get_int("--head-depth", demo.diffloss_d);
  c.diffloss_w = p.get_int("--head-width", demo.diffloss_w);
  c.num_sampling_steps = p.get("--num-sampling-steps", demo.num_sampling_steps);
  c.class_num = training::world_class_count();
  setup.mask_ratio_min = p.get_double("--mask-ratio-min", 0.7);
  setup.label_drop_prob = p.get_double("--label-drop", 0.1);
  setup.diffusion_batch_mul = p.get_int("--diffusion-batch-mul", 4);
  setup.ema_rate = p.get_double("--ema", 0.999);
  setup.flip = !p.flag("--no-flip");
  read_world_data_options(p, setup);
  // vae_embed_dim, img_size and vae_stride follow the VAE checkpoint.
  training::fit_mar_to_vae(setup);
  const training::TrainSummary s = training::train_mar(options, setup);
  return finish_training("mar", s, "held-out diffusion loss", 4);
}

}  // namespace kvs::train_app
