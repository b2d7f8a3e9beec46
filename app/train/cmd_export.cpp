// kvstudio-train export: a work folder -> a model bundle (resources/models/NAME).
#include <algorithm>
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/train/train_commands.h"
#include "engine/core/errors.h"
#include "engine/training/llamagen/bundle_export.h"
#include "engine/training/trainable_families.h"

namespace kvs::train_app {

int cmd_export(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args,
                   {"--work", "--out", "--family", "--name", "--dtype", "--classifier", "--cfg", "--temperature",
                    "--top-k", "--top-p", "--steps", "--cfg-schedule", "--num-sampling-steps", "--encoder-into"},
                   {"--no-ema", "--shared-classifier", "--help"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-train export --work DIR --out BUNDLE_DIR [options]\n"
        "  Writes a model bundle (model.json + weights.safetensors, the format of converted official\n"
        "  checkpoints) from DIR/vq and DIR/gpt (llamagen), DIR/var-vae and DIR/var (var) or\n"
        "  DIR/kl-vae and DIR/mar (mar), with the world's class names, sampling defaults,\n"
        "  provenance (the exact training commands) and\n"
        "  DIR/classifier as evaluation-classifier.safetensors.\n"
        "  --family llamagen|var|mar|janus-pro   which demo model (default llamagen)\n"
        "  --name NAME              bundle name (default llamagen-demo / var-demo / mar-demo)\n"
        "  --classifier FILE        evaluation classifier to copy when DIR/classifier has none\n"
        "                           (e.g. resources/models/shared/evaluation-classifier.safetensors)\n"
        "  --shared-classifier      name --classifier FILE as a shared file instead of copying it:\n"
        "                           FILE must be in the folder shared/ beside BUNDLE_DIR (as the demo\n"
        "                           bundles in resources/models share one classifier)\n"
        "  --dtype f16|bf16|f32     stored weight type (default f16)\n"
        "  --cfg X --temperature X --top-k N --top-p X   sampling_defaults (default 4, 1, 0, 1)\n"
        "  mar only:\n"
        "  --cfg X --temperature X  guidance (default 3, linear ramp) and diffusion temperature (default 1)\n"
        "  --steps N                decoding steps (default 32)\n"
        "  --cfg-schedule S         linear | constant (default linear)\n"
        "  --num-sampling-steps S   the diffusion head's respacing (default: the run's, ddim25)\n"
        "  --no-ema                 ship the raw weights instead of the EMA\n"
        "\n"
        "       kvstudio-train export --work DIR --encoder-into BUNDLE_DIR [--dtype f16|bf16|f32]\n"
        "  Writes the VQ encoder DIR/vq fitted to BUNDLE_DIR's decoder (`kvstudio-train vq\n"
        "  --decoder-from BUNDLE_DIR`) into that llamagen or janus-pro bundle (files.vq_encoder),\n"
        "  so that it can finish pictures; the bundle's other files stay as they are.");
    return 0;
  }
  if (p.has("--encoder-into")) {
    for (const char* option : {"--out", "--family", "--name", "--classifier", "--cfg", "--temperature", "--top-k",
                               "--top-p", "--steps", "--cfg-schedule", "--num-sampling-steps"})
      if (p.has(option))
        throw InvalidArgumentError(std::string("option ") + option + " does not apply to --encoder-into");
    const std::string bundle = p.get("--encoder-into", "");
    const std::string dtype = p.get("--dtype", "f16");
    const int64_t n = training::export_vq_encoder_into_bundle(p.require("--work"), bundle, dtype);
    std::printf("wrote the VQ encoder (%lld tensors, %s) into %s\n", static_cast<long long>(n), dtype.c_str(),
                bundle.c_str());
    return 0;
  }
  training::BundleExportOptions o;
  o.work_dir = p.require("--work");
  o.out_dir = p.require("--out");
  const std::string family_name = p.get("--family", "llamagen");
  const training::TrainableFamily& family = training::find_trainable_family(family_name);
  o.name = p.get("--name", family_name + "-demo");
  o.classifier_file = p.get("--classifier", "");
  o.shared_classifier = p.flag("--shared-classifier");
  o.dtype = p.get("--dtype", "f16");
  // The family's sampling defaults, each overridden by its option.
  o.sampling_defaults = family.sampling_defaults;
  const std::vector<std::pair<const char*, const char*>> sampling_options = {
      {"--cfg", "cfg_scale"}, {"--temperature", "temperature"},  {"--top-k", "top_k"}, {"--top-p", "top_p"},
      {"--steps", "steps"},   {"--cfg-schedule", "cfg_schedule"}};
  for (const auto& [option, key] : sampling_options) {
    if (!p.has(option)) continue;
    if (!o.sampling_defaults.contains(key))
      throw InvalidArgumentError(std::string("option ") + option + " does not apply to --family " + family_name);
    const nlohmann::json& fallback = o.sampling_defaults[key];
    if (fallback.is_string()) o.sampling_defaults[key] = p.get(option, "");
    else if (fallback.is_number_integer()) o.sampling_defaults[key] = p.get_int(option, 0);
    else o.sampling_defaults[key] = p.get_double(option, 0);
  }
  for (const char* option : {"--no-ema", "--num-sampling-steps"}) {
    const bool given = p.has(option) || p.flag(option);
    const auto& own = family.export_options;
    if (given && std::find(own.begin(), own.end(), option) == own.end())
      throw InvalidArgumentError(std::string("option ") + option + " does not apply to --family " + family_name);
  }
  o.use_ema = !p.flag("--no-ema");
  o.diffusion_steps = p.get("--num-sampling-steps", "");
  o.command = command_line;
  family.export_bundle(o);
  std::printf("wrote %s (%s, %s weights)\n", o.out_dir.c_str(), o.name.c_str(), o.dtype.c_str());
  return 0;
}

}  // namespace kvs::train_app
