// kvstudio-train export: a work folder -> a model bundle (resources/models/NAME).
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/train/train_commands.h"
#include "engine/core/errors.h"
#include "engine/training/llamagen/bundle_export.h"
#include "engine/training/mar/mar_bundle_export.h"
#include "engine/training/var/var_bundle_export.h"

namespace kvs::train_app {

int cmd_export(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, {"--work", "--out", "--family", "--name", "--dtype", "--classifier", "--cfg", "--temperature", "--top-k",
                    "--top-p", "--steps", "--cfg-schedule", "--num-sampling-steps"},
                   {"--no-ema", "--help"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-train export --work DIR --out BUNDLE_DIR [options]\n"
        "  Writes a model bundle (model.json + weights.safetensors, the format of converted official\n"
        "  checkpoints) from DIR/vq and DIR/gpt (llamagen), DIR/var-vae and DIR/var (var) or\n"
        "  DIR/kl-vae and DIR/mar (mar), with the world's class names, sampling defaults,\n"
        "  provenance (the exact training commands) and\n"
        "  DIR/classifier as evaluation-classifier.safetensors.\n"
        "  --family llamagen|var|mar which demo model (default llamagen)\n"
        "  --name NAME              bundle name (default llamagen-demo / var-demo / mar-demo)\n"
        "  --classifier FILE        evaluation classifier to copy when DIR/classifier has none\n"
        "                           (e.g. resources/models/llamagen-demo/evaluation-classifier.safetensors)\n"
        "  --dtype f16|bf16|f32     stored weight type (default f16)\n"
        "  --cfg X --temperature X --top-k N --top-p X   sampling_defaults (default 4, 1, 0, 1)\n"
        "  mar only:\n"
        "  --cfg X --temperature X  guidance (default 3, linear ramp) and diffusion temperature (default 1)\n"
        "  --steps N                decoding steps (default 32)\n"
        "  --cfg-schedule S         linear | constant (default linear)\n"
        "  --num-sampling-steps S   the diffusion head's respacing (default: the run's, ddim25)\n"
        "  --no-ema                 ship the raw weights instead of the EMA");
    return 0;
  }
  training::BundleExportOptions o;
  o.work_dir = p.require("--work");
  o.out_dir = p.require("--out");
  const std::string family = p.get("--family", "llamagen");
  if (family != "llamagen" && family != "var" && family != "mar")
    throw InvalidArgumentError("--family must be llamagen, var or mar, got '" + family + "'");
  o.name = p.get("--name", family + "-demo");
  o.classifier_file = p.get("--classifier", "");
  o.dtype = p.get("--dtype", "f16");
  o.sampling_defaults = {{"cfg_scale", p.get_double("--cfg", 4.0)},
                         {"temperature", p.get_double("--temperature", 1.0)},
                         {"top_k", p.get_int("--top-k", 0)},
                         {"top_p", p.get_double("--top-p", 1.0)}};
  if (family == "mar") {
    // MAR's sampler: the masked session reads steps, cfg (ramped by cfg_schedule) and temperature.
    o.sampling_defaults = {{"cfg_scale", p.get_double("--cfg", 3.0)},
                           {"cfg_schedule", p.get("--cfg-schedule", "linear")},
                           {"temperature", p.get_double("--temperature", 1.0)},
                           {"steps", p.get_int("--steps", 32)}};
    o.use_ema = !p.flag("--no-ema");
    o.diffusion_steps = p.get("--num-sampling-steps", "");
  }
  o.command = command_line;
  if (family == "mar") training::export_mar_bundle(o);
  else if (family == "var") training::export_var_bundle(o);
  else training::export_llamagen_bundle(o);
  std::printf("wrote %s (%s, %s weights)\n", o.out_dir.c_str(), o.name.c_str(), o.dtype.c_str());
  return 0;
}

}  // namespace kvs::train_app
