#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/models/llamagen/llamagen_converter.h"
#include "engine/models/mar/mar_converter.h"
#include "engine/models/var/var_converter.h"

namespace kvs::cli {
namespace {

std::vector<int64_t> parse_int_list(const std::string& option, const std::string& text) {
  std::vector<int64_t> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    out.push_back(parse_int(option, text.substr(begin, end - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return out;
}

int convert_var(const ArgParser& p) {
  var::VarConvertOptions o;
  o.checkpoint = p.require("--checkpoint");
  o.tokenizer = p.require("--tokenizer");
  o.out_dir = p.require("--out");
  o.name = p.get("--name", "");
  o.num_heads = p.get_int("--n-head", 0);
  if (p.has("--patch-nums")) o.patch_nums = parse_int_list("--patch-nums", p.get("--patch-nums", ""));
  if (p.has("--image-size")) o.patch_nums = var::patch_nums_for_resolution(p.get_int("--image-size", 256));
  o.weights_dtype = p.get("--dtype", "keep");
  const bool quiet = p.flag("--quiet");
  const auto report = var::convert_var_checkpoint(o, [&](double f, const std::string& stage) {
    if (!quiet) std::fprintf(stderr, "[%3d%%] %s\n", static_cast<int>(f * 100), stage.c_str());
  });
  std::printf("wrote %s: %lld tensors, %.1f MiB (VAR depth %lld, width %lld, %lld heads%s, %lld scales up to %lldx%lld; "
              "dropped %zu unused tensors)\n",
              o.out_dir.c_str(), (long long)report.tensors_written, report.bytes_written / 1048576.0,
              (long long)report.var.depth, (long long)report.var.embed_dim, (long long)report.var.num_heads,
              report.var.shared_aln ? ", shared AdaLN" : "", (long long)report.var.scales(),
              (long long)report.var.final_grid(), (long long)report.var.final_grid(), report.dropped_keys.size());
  return 0;
}

int convert_mar(const ArgParser& p) {
  for (const char* option : {"--image-size", "--patch-nums"})
    if (p.has(option)) throw InvalidArgumentError(std::string("option ") + option + " does not apply to --family mar");
  mar::MarConvertOptions o;
  o.checkpoint = p.require("--checkpoint");
  o.vae = p.require("--tokenizer");
  o.out_dir = p.require("--out");
  o.name = p.get("--name", "");
  o.num_heads = p.get_int("--n-head", 0);
  o.vae_stride = p.get_int("--vae-stride", 16);
  o.num_sampling_steps = p.get("--diffusion-steps", "100");
  const std::string weights = p.get("--weights", "ema");
  if (weights != "ema" && weights != "raw") throw InvalidArgumentError("option --weights must be ema or raw");
  o.use_ema = weights == "ema";
  o.weights_dtype = p.get("--dtype", "keep");
  const bool quiet = p.flag("--quiet");
  const auto report = mar::convert_mar_checkpoint(o, [&](double f, const std::string& stage) {
    if (!quiet) std::fprintf(stderr, "[%3d%%] %s\n", static_cast<int>(f * 100), stage.c_str());
  });
  // report.warnings were logged by the converter already.
  std::printf("wrote %s: %lld tensors, %.1f MiB (MAR width %lld, %lld+%lld blocks, %lld heads, %lldx%lld tokens, "
              "diffusion head %lld x %lld; weights \"%s\"; dropped %zu unused VAE tensors)\n",
              o.out_dir.c_str(), (long long)report.tensors_written, report.bytes_written / 1048576.0,
              (long long)report.mar.encoder_embed_dim, (long long)report.mar.encoder_depth,
              (long long)report.mar.decoder_depth, (long long)report.mar.encoder_num_heads,
              (long long)report.mar.seq_h(), (long long)report.mar.seq_w(), (long long)report.mar.diffloss_d,
              (long long)report.mar.diffloss_w, report.source_key.c_str(), report.dropped_keys.size());
  return 0;
}

}  // namespace

int cmd_convert(const std::vector<std::string>& args) {
  ArgParser p(args, {"--family", "--checkpoint", "--tokenizer", "--out", "--name", "--image-size", "--n-head", "--dtype", "--patch-nums",
                          "--vae-stride", "--diffusion-steps", "--weights"},
              {"--help", "--quiet"}, 0);
  if (p.flag("--help")) {
    std::puts("usage: kvstudio-cli convert --family llamagen --checkpoint c2i_B_384.pt --tokenizer vq_ds16_c2i.pt --out DIR\n"
              "  [--image-size 256|384 (default: from the file name)] [--n-head N (default: official size table)]\n"
              "  [--dtype keep|f32|f16|bf16 (default keep)] [--name NAME]\n"
              "usage: kvstudio-cli convert --family var --checkpoint var_d16.pth --tokenizer vae_ch160v4096z32.pth --out DIR\n"
              "  [--image-size 256|512|1024 or --patch-nums 1,2,3,... (default: the official schedule that fits)]\n"
              "  [--n-head N (default: from the checkpoint)] [--dtype keep|f32|f16|bf16] [--name NAME]\n"
              "usage: kvstudio-cli convert --family mar --checkpoint mar_base/checkpoint-last.pth --tokenizer kl16.ckpt --out DIR\n"
              "  [--weights ema|raw (default ema: the model_ema entry the official evaluation uses)]\n"
              "  [--n-head N (default: official table, 12 for width 768, 16 for 1024/1280)] [--vae-stride 16]\n"
              "  [--diffusion-steps 100 (the diffusion head's respaced steps)] [--dtype keep|f32|f16|bf16] [--name NAME]");
    return 0;
  }
  const std::string family = p.require("--family");
  if (family == "var") return convert_var(p);
  if (family == "mar") return convert_mar(p);
  if (family != "llamagen") throw InvalidArgumentError("unknown --family '" + family + "' (supported: llamagen, var, mar)");
  if (p.has("--patch-nums")) throw InvalidArgumentError("option --patch-nums applies to --family var only");
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
