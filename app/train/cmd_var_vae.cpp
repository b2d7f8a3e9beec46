// kvstudio-train var-vae: VAR's multi-scale VQVAE on the procedural world.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/models/var/var_random_init.h"
#include "engine/training/var/var_vae_trainer.h"

namespace kvs::train_app {
namespace {

constexpr RecipeDefaults kRecipe = kTokenizerRecipe;

}  // namespace

int cmd_var_vae(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   with_common_options({"--ch", "--ch-mult", "--res-blocks", "--cvae", "--vocab-size", "--patch-nums",
                                        "--quant-resi", "--share-quant-resi", "--beta", "--restart-every",
                                        "--restart-until"}),
                   with_common_flags({"--no-flip"}), 0);
  const var::VqvaeConfig demo = var::demo_vqvae_config();
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train var-vae --work DIR [options]\n"
        "  Trains VAR's multi-scale VQVAE (encoder, shared codebook with residual quantisation over\n"
        "  the scale schedule and the phi convolutions, the engine's decoder) on world images.\n"
        "  Defaults: the var-demo preset (64 px, 4x downsampling, 16x16 final scale).\n"
        "  --ch N                   base channels (default 32)\n"
        "  --ch-mult A,B,C          channel multipliers per level, encoder and decoder (default 1,1,2 = 4x)\n"
        "  --res-blocks N           ResnetBlocks per encoder level (decoder: N+1) (default 2)\n"
        "  --cvae N                 latent / code channels (default 16)\n"
        "  --vocab-size N           codes (default 1024)\n"
        "  --patch-nums A,B,...     scale schedule, ending at the final grid (default 1,2,3,4,5,6,8,10,13,16)\n"
        "  --quant-resi X           phi residual ratio (default 0.5)\n"
        "  --share-quant-resi K     partially shared phi count (default 4)\n"
        "  --beta X                 commitment weight (default 0.25)\n"
        "  --restart-every N        dead-code restart period, 0 = off (default 100)\n"
        "  --restart-until X        restarts only in the first X of the run (default 0.5)\n"
        "  --no-flip                no left-right flip augmentation\n"
        "%s%s",
        world_data_help("the PSNR curve").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::VarVaeTrainSetup setup;
  var::VqvaeConfig& arch = setup.model.arch;
  arch = demo;
  arch.ch = p.get_int("--ch", demo.ch);
  if (p.has("--ch-mult")) arch.ch_mult = parse_int_list("--ch-mult", p.get("--ch-mult", ""));
  arch.num_res_blocks = p.get_int("--res-blocks", demo.num_res_blocks);
  arch.z_channels = p.get_int("--cvae", demo.z_channels);
  arch.vocab_size = p.get_int("--vocab-size", demo.vocab_size);
  if (p.has("--patch-nums")) arch.v_patch_nums = parse_int_list("--patch-nums", p.get("--patch-nums", ""));
  arch.quant_resi = p.get_double("--quant-resi", demo.quant_resi);
  arch.share_quant_resi = p.get_int("--share-quant-resi", demo.share_quant_resi);
  setup.model.beta = p.get_double("--beta", 0.25);
  setup.image_size = static_cast<int>(arch.image_size());
  read_world_data_options(p, setup);
  setup.restart_every = p.get_int("--restart-every", 100);
  setup.restart_until_fraction = p.get_double("--restart-until", 0.5);
  setup.flip = !p.flag("--no-flip");
  const training::TrainSummary s = training::train_var_vae(options, setup);
  return finish_training("var-vae", s, "held-out reconstruction PSNR", 2, " dB");
}

}  // namespace kvs::train_app
