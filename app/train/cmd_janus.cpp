// kvstudio-train janus: the text-to-image demo model (Janus-Pro's generation architecture).
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/training/bundle_start.h"
#include "engine/training/janus/janus_trainer.h"
#include "engine/training/janus/text_tokenizer_trainer.h"

namespace kvs::train_app {
namespace {

constexpr RecipeDefaults kRecipe{.steps = 4000,
                                 .batch = 8,
                                 .lr = 8e-4,
                                 .warmup = 100,
                                 .weight_decay = 0.05,
                                 .log_every = 20,
                                 .eval_every = 500,
                                 .checkpoint_every = 100};

}  // namespace

int cmd_janus(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   with_common_options({"--vq", "--text-tokenizer", "--hidden", "--layers", "--heads", "--kv-heads",
                                        "--intermediate", "--context", "--captions-per-image", "--condition-dropout",
                                        "--init-from"}),
                   with_common_flags({"--mirror"}), 0);
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train janus --work DIR [options]\n"
        "  Trains a small model with Janus-Pro's generation architecture (LLaMA language model,\n"
        "  gen_embed/gen_aligner/gen_head) on captioned world pictures, in the official prompt\n"
        "  format, with condition dropout for CFG.\n"
        "  --vq DIR                 image tokenizer run folder (default WORK/vq)\n"
        "  --text-tokenizer DIR     text tokenizer folder (default WORK/text-tokenizer)\n"
        "  --hidden N               language model width (default 256)\n"
        "  --layers N               decoder layers (default 8)\n"
        "  --heads N                attention heads (default 8)\n"
        "  --kv-heads N             key/value heads (default: --heads)\n"
        "  --intermediate N         MLP width (default 704)\n"
        "  --context N              positions: prompt + image tokens (default 512)\n"
        "  --captions-per-image K   train-split captions of each picture (default 4)\n"
        "  --condition-dropout X    prompt -> CFG unconditional row probability (default 0.1)\n"
        "  --mirror                 also train on every picture mirrored left-right, captioned from its\n"
        "                           mirrored facts (the sides swapped)\n"
        "  --init-from BUNDLE       start from a janus-pro bundle's generator (its sizes are the defaults\n"
        "                           of the size options); --vq must then be an encoder fitted to the\n"
        "                           bundle's decoder (kvstudio-train vq --decoder-from BUNDLE)\n"
        "%s%s",
        world_data_help("the held-out loss").c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::JanusTrainSetup setup;
  setup.vq_run_dir = input_run_dir(p, "--vq", options, "vq");
  setup.text_tokenizer_dir = p.get("--text-tokenizer", training::text_tokenizer_dir(options.work_dir));
  setup.init_from = p.get("--init-from", "");
  setup.mirror = p.flag("--mirror");
  // Defaults: the recipe's sizes, or the starting bundle's.
  janus::LanguageConfig defaults;
  defaults.hidden_size = 256;
  defaults.num_hidden_layers = 8;
  defaults.num_attention_heads = 8;
  defaults.num_key_value_heads = 8;
  defaults.intermediate_size = 704;
  defaults.max_position_embeddings = 512;
  if (!setup.init_from.empty()) defaults = training::janus_bundle_architecture(setup.init_from).language;
  janus::LanguageConfig& l = setup.model.language;
  l.hidden_size = p.get_int("--hidden", defaults.hidden_size);
  l.num_hidden_layers = p.get_int("--layers", defaults.num_hidden_layers);
  l.num_attention_heads = p.get_int("--heads", defaults.num_attention_heads);
  l.num_key_value_heads = p.get_int("--kv-heads",
                                    p.has("--heads") ? l.num_attention_heads : defaults.num_key_value_heads);
  l.intermediate_size = p.get_int("--intermediate", defaults.intermediate_size);
  l.max_position_embeddings = p.get_int("--context", defaults.max_position_embeddings);
  l.rms_norm_eps = defaults.rms_norm_eps;
  l.rope_theta = defaults.rope_theta;
  setup.captions_per_image = p.get_int("--captions-per-image", 4);
  setup.condition_dropout = p.get_double("--condition-dropout", 0.1);
  read_world_data_options(p, setup);
  training::fit_janus_to_tokenizers(setup);
  const training::TrainSummary s = training::train_janus(options, setup);
  return finish_training("janus", s, "held-out token loss", 4);
}

}  // namespace kvs::train_app
