// kvstudio-train vq: LlamaGen's VQ tokenizer on the procedural world.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/core/errors.h"
#include "engine/training/llamagen/vq_trainer.h"

namespace kvs::train_app {
namespace {

constexpr RecipeDefaults kRecipe = kTokenizerRecipe;

}  // namespace

int cmd_vq(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   with_common_options({"--image-size", "--ch", "--ch-mult", "--z-channels", "--codebook-size",
                                        "--codebook-dim", "--commit-beta", "--entropy-ratio", "--decoder-from"}),
                   with_common_flags({"--no-flip", "--no-l2-norm"}), 0);
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train vq --work DIR [options]\n"
        "  Trains LlamaGen's VQ tokenizer (encoder, l2-normalised codebook, decoder) on world images.\n"
        "  --image-size PX          training image size (default 64)\n"
        "  --ch N                   base channels (default 32)\n"
        "  --ch-mult A,B,C          channel multipliers per level; levels-1 halvings (default 1,1,2 = 4x)\n"
        "  --z-channels N           latent channels (default 64)\n"
        "  --codebook-size N        codes (default 1024)\n"
        "  --codebook-dim N         code vector size (default 8)\n"
        "  --commit-beta X          commitment loss weight (default 0.25)\n"
        "  --entropy-ratio X        entropy loss weight (default 0)\n"
        "  --no-flip                no left-right flip augmentation\n"
        "  --decoder-from BUNDLE    fit only the encoder to the frozen decoder and codebook of a llamagen\n"
        "                           or janus-pro bundle (its sizes replace the size options), so that a\n"
        "                           shipped generator can be trained on without its run folder\n"
        "%s%s",
        world_data_help("the PSNR curve").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::VqTrainSetup setup;
  setup.decoder_from = p.get("--decoder-from", "");
  if (!setup.decoder_from.empty())
    for (const char* size_option :
         {"--image-size", "--ch", "--ch-mult", "--z-channels", "--codebook-size", "--codebook-dim"})
      if (p.has(size_option))
        throw InvalidArgumentError(std::string(size_option) + " cannot be combined with --decoder-from (the bundle's " +
                                   "tokenizer sets the sizes)");
  llamagen::VqConfig& arch = setup.model.arch;
  arch.ch = p.get_int("--ch", 32);
  arch.decoder_ch_mult = parse_int_list("--ch-mult", p.get("--ch-mult", "1,1,2"));
  arch.z_channels = p.get_int("--z-channels", 64);
  arch.codebook_size = p.get_int("--codebook-size", 1024);
  arch.codebook_embed_dim = p.get_int("--codebook-dim", 8);
  arch.codebook_l2_norm = !p.flag("--no-l2-norm");
  setup.model.commit_loss_beta = p.get_double("--commit-beta", 0.25);
  setup.model.entropy_loss_ratio = p.get_double("--entropy-ratio", 0.0);
  setup.image_size = static_cast<int>(p.get_int("--image-size", 64));
  read_world_data_options(p, setup);
  setup.flip = !p.flag("--no-flip");
  const training::TrainSummary s = training::train_vq(options, setup);
  return finish_training("vq", s, "held-out reconstruction PSNR", 2, " dB");
}

}  // namespace kvs::train_app
