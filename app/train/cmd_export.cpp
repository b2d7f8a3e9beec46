// kvstudio-train export: a work folder -> a model bundle (resources/models/NAME).
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/train/train_commands.h"
#include "engine/training/llamagen/bundle_export.h"

namespace kvs::train_app {

int cmd_export(const std::vector<std::string>& args, const std::string& command_line) {
  cli::ArgParser p(args, {"--work", "--out", "--name", "--dtype", "--cfg", "--temperature", "--top-k", "--top-p"},
                   {"--help"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-train export --work DIR --out BUNDLE_DIR [options]\n"
        "  Writes a model bundle (model.json + weights.safetensors, the format of converted official\n"
        "  checkpoints) from DIR/vq and DIR/gpt, with the world's class names, sampling defaults,\n"
        "  provenance (the exact training commands) and DIR/classifier as evaluation-classifier.safetensors.\n"
        "  --name NAME              bundle name (default llamagen-demo)\n"
        "  --dtype f16|bf16|f32     stored weight type (default f16)\n"
        "  --cfg X --temperature X --top-k N --top-p X   sampling_defaults (default 4, 1, 0, 1)");
    return 0;
  }
  training::BundleExportOptions o;
  o.work_dir = p.require("--work");
  o.out_dir = p.require("--out");
  o.name = p.get("--name", "llamagen-demo");
  o.dtype = p.get("--dtype", "f16");
  o.sampling_defaults = {{"cfg_scale", p.get_double("--cfg", 4.0)},
                         {"temperature", p.get_double("--temperature", 1.0)},
                         {"top_k", p.get_int("--top-k", 0)},
                         {"top_p", p.get_double("--top-p", 1.0)}};
  o.command = command_line;
  training::export_llamagen_bundle(o);
  std::printf("wrote %s (%s, %s weights)\n", o.out_dir.c_str(), o.name.c_str(), o.dtype.c_str());
  return 0;
}

}  // namespace kvs::train_app
