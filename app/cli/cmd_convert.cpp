#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/models/llamagen/llamagen_converter.h"

namespace kvs::cli {

int cmd_convert(const std::vector<std::string>& args) {
  ArgParser p(args, {"--family", "--checkpoint", "--tokenizer", "--out", "--name", "--image-size", "--n-head", "--dtype"},
              {"--help", "--quiet"}, 0);
  if (p.flag("--help")) {
    std::puts("usage: kvstudio-cli convert --family llamagen --checkpoint c2i_B_384.pt --tokenizer vq_ds16_c2i.pt --out DIR\n"
              "  [--image-size 256|384 (default: from the file name)] [--n-head N (default: official size table)]\n"
              "  [--dtype keep|f32|f16|bf16 (default keep)] [--name NAME]");
    return 0;
  }
  const std::string family = p.require("--family");
  if (family != "llamagen") throw InvalidArgumentError("unknown --family '" + family + "' (supported: llamagen)");
  llamagen::ConvertOptions o;
  o.checkpoint = p.require("--checkpoint");
  o.tokenizer = p.require("--tokenizer");
  o.out_dir = p.require("--out");
  o.name = p.get("--name", "");
  o.image_size = p.get_int("--image-size", 0);
  o.n_head = p.get_int("--n-head", 0);
  o.weights_dtype = p.get("--dtype", "keep");
  const bool quiet = p.flag("--quiet");
  const auto report = llamagen::convert_llamagen_checkpoint(o, [&](double f, const std::string& stage) {
    if (!quiet) std::fprintf(stderr, "[%3d%%] %s\n", static_cast<int>(f * 100), stage.c_str());
  });
  std::printf("wrote %s: %lld tensors, %.1f MiB (GPT dim %lld x %lld layers, %lld heads, %lldx%lld tokens; "
              "dropped %zu unused tokenizer tensors)\n",
              o.out_dir.c_str(), (long long)report.tensors_written, report.bytes_written / 1048576.0,
              (long long)report.gpt.dim, (long long)report.gpt.n_layer, (long long)report.gpt.n_head,
              (long long)report.gpt.grid_size(), (long long)report.gpt.grid_size(), report.dropped_keys.size());
  return 0;
}

}  // namespace kvs::cli
