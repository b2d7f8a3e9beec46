// kvstudio-train evaluate: the quality gates of a trained bundle, into its model.json.
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/train/train_commands.h"
#include "engine/training/bundle_evaluation.h"

namespace kvs::train_app {

int cmd_evaluate(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   {"--bundle", "--work", "--classifier", "--generated", "--reference", "--batch", "--seed",
                    "--threads", "--device", "--samples", "--samples-per-class", "--samples-scale"},
                   {"--no-write", "--help"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-train evaluate --bundle DIR [--work WORK] [options]\n"
        "  Measures the bundle's quality and writes it into DIR/model.json under \"quality\":\n"
        "  tokenizer PSNR on held-out images (needs --work for the encoder: WORK/vq or WORK/var-vae),\n"
        "  the classifier's accuracy on held-out images, the class accuracy of generated images\n"
        "  (engine generation path, the bundle's sampling_defaults) and the demo-FID (classifier\n"
        "  features). Works for llamagen and var bundles.\n"
        "  --classifier FILE        evaluation classifier (default: the bundle's, else WORK/classifier)\n"
        "  --generated N            generated images, balanced over classes (default 1000)\n"
        "  --reference N            held-out real images (default 1000)\n"
        "  --batch N                images per generation run (default 100)\n"
        "  --seed S                 generation seed of the first batch (default 0)\n"
        "  --samples PNG            also write a grid of generated samples (one row per class)\n"
        "  --samples-per-class N    columns of that grid (default 8)\n"
        "  --samples-scale K        upscale the grid K times (default 2)\n"
        "  --threads N              CPU threads (default 1)\n"
        "  --device D               cpu | cuda | cuda:N | auto (default cpu; cuda is cuda:0)\n"
        "  --no-write               print the numbers only");
    return 0;
  }
  training::BundleEvaluationOptions o;
  o.bundle_dir = p.require("--bundle");
  o.work_dir = p.get("--work", "");
  o.classifier_path = p.get("--classifier", "");
  o.generated = p.get_int("--generated", 1000);
  o.reference = p.get_int("--reference", 1000);
  o.batch = p.get_int("--batch", 100);
  o.seed = p.get_u64("--seed", 0);
  o.threads = static_cast<int>(p.get_int("--threads", 1));
  o.device = p.get("--device", "cpu");
  o.samples_png = p.get("--samples", "");
  o.samples_per_class = p.get_int("--samples-per-class", 8);
  o.samples_scale = static_cast<int>(p.get_int("--samples-scale", 2));
  o.write_manifest = !p.flag("--no-write");
  o.command = command_line;
  const nlohmann::json q = training::evaluate_bundle(o);
  std::printf("%s\n", q.dump(2).c_str());
  return 0;
}

}  // namespace kvs::train_app
