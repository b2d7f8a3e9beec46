// kvstudio-train classifier: the evaluation classifier of the world's scenes.
#include <cstdio>

#include "app/train/train_commands.h"
#include "app/train/train_options.h"
#include "engine/training/classifier_trainer.h"

namespace kvs::train_app {
namespace {

constexpr RecipeDefaults kRecipe{.steps = 800,
                                 .batch = 32,
                                 .lr = 2e-3,
                                 .warmup = 50,
                                 .weight_decay = 0.05,
                                 .log_every = 20,
                                 .eval_every = 200,
                                 .checkpoint_every = 250};

}  // namespace

int cmd_classifier(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, with_common_options({"--image-size", "--channels"}), with_common_flags({"--no-augment"}), 0);
  if (p.flag("--help")) {
    std::printf(
        "usage: kvstudio-train classifier --work DIR [options]\n"
        "  Trains the scene classifier used to evaluate models (class accuracy, demo-FID);\n"
        "  writes DIR/classifier/classifier.safetensors.\n"
        "  --image-size PX          image size (default 64; must match the models it judges)\n"
        "  --channels A,B,...       channels per stage (default 32,64,128,128)\n"
        "  --no-augment             no flips, blur or noise\n"
        "%s%s",
        world_data_help("the accuracy", {1000, 100}).c_str(), common_options_help(kRecipe).c_str());
    return 0;
  }
  training::TrainOptions options = parse_train_options(p, kRecipe, command_line);
  training::ClassifierTrainSetup setup;
  setup.model.image_size = p.get_int("--image-size", 64);
  setup.model.channels = parse_int_list("--channels", p.get("--channels", "32,64,128,128"));
  const WorldDataOptions data = parse_world_data_options(p, {1000, 100});
  setup.train_per_class = data.train_per_class;
  setup.eval_per_class = data.eval_per_class;
  setup.augment = !p.flag("--no-augment");
  const training::TrainSummary s = training::train_classifier(options, setup);
  return finish_training("classifier", s, "held-out accuracy", 4);
}

}  // namespace kvs::train_app
