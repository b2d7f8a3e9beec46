// kvstudio-train: trains KV Studio's demo models on the procedural world, exports
// them as model bundles and measures their quality.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "app/train/train_commands.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"

namespace {

const char* kUsage = R"(kvstudio-train — train KV Studio's demo models on the procedural image world

usage: kvstudio-train <command> [options]

LlamaGen (raster) demo model, in this order:
  vq          train the VQ tokenizer                      -> WORK/vq
  classifier  train the evaluation scene classifier       -> WORK/classifier
  gpt         train the class-conditional GPT             -> WORK/gpt
  export      write a model bundle from WORK              -> e.g. resources/models/llamagen-demo
  evaluate    measure a bundle's quality gates            -> model.json "quality"

VAR (next-scale) demo model, in this order (the classifier is shared):
  var-vae     train the multi-scale VQVAE                 -> WORK/var-vae
  var         train the next-scale transformer            -> WORK/var
  export --family var                                     -> e.g. resources/models/var-demo
  evaluate    (the same command for every family)

MAR (masked, diffusion head) demo model, in this order (the classifier is shared):
  kl-vae      train the KL VAE                            -> WORK/kl-vae
  mar         train MAR on the VAE's scaled latents       -> WORK/mar
  export --family mar                                     -> e.g. resources/models/mar-demo
  evaluate

Text-to-image demo model (Janus-Pro's generation architecture), in this order
(the VQ tokenizer is trained by `vq`, the classifier is shared):
  text-tokenizer  learn the byte-level BPE tokenizer on the captions -> WORK/text-tokenizer
  janus       train the model on captioned pictures      -> WORK/janus
  export --family janus-pro                               -> e.g. resources/models/janus-demo
  evaluate

Any bundle:
  compact     store the generator's matrices as row-scaled int8 (half of F16 on disk)

Every training command is seeded and resumable (--resume), logs its loss curve to
WORK/<kind>/loss.csv and checkpoints to WORK/<kind>/checkpoint.json; Ctrl-C
checkpoints before stopping.

global options:
  --log-level L   trace|debug|info|warn|error|off (default info)
  --help          this text, or `kvstudio-train <command> --help`
)";

std::string join_command(const std::vector<std::string>& args) {
  std::string s = "kvstudio-train";
  for (const auto& a : args) {
    s += " ";
    s += a;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    kvs::set_log_level(kvs::LogLevel::Info);
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--log-level") {
        if (i + 1 >= args.size()) throw kvs::InvalidArgumentError("option --log-level needs a value");
        kvs::set_log_level(kvs::parse_log_level(args[i + 1]));
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
        break;
      }
    }
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::fputs(kUsage, stdout);
      return args.empty() ? 2 : 0;
    }
    const std::string command = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    const std::string line = join_command(args);
    using Command = int (*)(const std::vector<std::string>&, const std::string&);
    const std::pair<const char*, Command> table[] = {
        {"vq", kvs::train_app::cmd_vq},
        {"classifier", kvs::train_app::cmd_classifier},
        {"gpt", kvs::train_app::cmd_gpt},
        {"export", kvs::train_app::cmd_export},
        {"evaluate", kvs::train_app::cmd_evaluate},
        {"var-vae", kvs::train_app::cmd_var_vae},
        {"var", kvs::train_app::cmd_var},
        {"kl-vae", kvs::train_app::cmd_kl_vae},
        {"mar", kvs::train_app::cmd_mar},
        {"text-tokenizer", kvs::train_app::cmd_text_tokenizer},
        {"janus", kvs::train_app::cmd_janus},
        {"compact", kvs::train_app::cmd_compact},
    };
    for (const auto& [name, fn] : table)
      if (command == name) return fn(rest, line);
    throw kvs::InvalidArgumentError("unknown command '" + command + "' (see kvstudio-train --help)");
  } catch (const kvs::Error& e) {
    std::fprintf(stderr, "kvstudio-train: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::fprintf(stderr, "kvstudio-train: internal error: %s\n", what.substr(0, what.find('\n')).c_str());
    return 3;
  }
}
