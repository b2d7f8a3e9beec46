// kvstudio-train kl-vae: MAR's KL VAE (AutoencoderKL) on the procedural world.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/training/mar/kl_vae_trainer.h"

namespace kvs::train_app {
namespace {

// The tokenizers' recipe without weight decay (app/train/mar_demo_recipe.sh).
constexpr RecipeDefaults kl_vae_recipe() {
  RecipeDefaults r = kTokenizerRecipe;
  r.weight_decay = 0.0;
  return r;
}
constexpr RecipeDefaults kRecipe = kl_vae_recipe();

}  // namespace

int cmd_kl_vae(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, with_common_options({"--ch", "--ch-mult", "--res-blocks", "--embed-dim", "--kl-weight"}),
                   with_common_flags({"--no-flip"}), 0);
  const mar::KlVaeConfig demo = mar::demo_kl_vae_config();
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train kl-vae --work DIR [options]\n"
        "  Trains MAR's KL VAE (encoder, diagonal-Gaussian posterior, the engine's decoder) on world\n"
        "  images with MSE + a small KL term (no LPIPS/GAN: see engine/training/mar/kl_vae_trainer.h).\n"
        "  Defaults: the mar-demo preset (64 px, 4x downsampling, 4 x 16 x 16 latents).\n"
        "  --ch N                   base channels (default 32)\n"
        "  --ch-mult A,B,C          channel multipliers per level; levels-1 halvings (default 1,1,2 = 4x)\n"
        "  --res-blocks N           ResnetBlocks per encoder level (decoder: N+1) (default 1)\n"
        "  --embed-dim N            latent channels (default 4)\n"
        "  --kl-weight X            KL weight against the per-pixel MSE (default 1e-4)\n"
        "  --no-flip                no left-right flip augmentation\n"
        "%s%s",
        world_data_help("the PSNR curve").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::KlVaeTrainSetup setup;
  mar::KlVaeConfig& arch = setup.model.arch;
  arch = demo;
  arch.ch = p.get_int("--ch", demo.ch);
  if (p.has("--ch-mult")) arch.ch_mult = parse_int_list("--ch-mult", p.get("--ch-mult", ""));
  arch.num_res_blocks = p.get_int("--res-blocks", demo.num_res_blocks);
  arch.embed_dim = p.get_int("--embed-dim", demo.embed_dim);
  setup.model.kl_weight = p.get_double("--kl-weight", 1e-4);
  setup.image_size = static_cast<int>(demo.resolution);
  arch.resolution = setup.image_size;
  read_world_data_options(p, setup);
  setup.flip = !p.flag("--no-flip");
  const training::TrainSummary s = training::train_kl_vae(options, setup);
  return finish_training("kl-vae", s, "held-out reconstruction PSNR", 2, " dB");
}

}  // namespace kvs::train_app
