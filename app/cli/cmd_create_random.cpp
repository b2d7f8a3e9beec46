#include <nlohmann/json.hpp>

#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/models/var/var_random_init.h"

namespace kvs::cli {

int cmd_create_random(const std::vector<std::string>& args) {
  ArgParser p(args, {"--out", "--preset", "--image-size", "--tokenizer", "--classes", "--seed", "--dtype", "--name",
                     "--diffusion-steps"},
              {"--help"}, 0);
  if (p.flag("--help")) {
    std::puts("usage: kvstudio-cli create-random --out DIR [--preset demo|GPT-B|GPT-L|...|GPT-3B]\n"
              "  [--image-size 256|384] [--tokenizer VQ-16|VQ-8] [--classes N] [--seed N] [--dtype f32|f16|bf16]\n"
              "  A randomly initialised LlamaGen bundle: the demo preset is the bundled default model\n"
              "  (untrained); official sizes let you measure speed and memory without a download.\n"
              "usage: kvstudio-cli create-random --out DIR --preset var-demo|var-d16|var-d20|var-d24|var-d30|var-d36\n"
              "  [--image-size 256|512 (default: the official one, 512 for d36)] [--classes N] [--seed N] [--dtype ...]\n"
              "  A randomly initialised VAR bundle (next-scale) with the official VQVAE (vae_ch160v4096z32).\n"
              "usage: kvstudio-cli create-random --out DIR --preset mar-demo|mar-B|mar-L|mar-H\n"
              "  [--classes N] [--diffusion-steps 100] [--seed N] [--dtype ...]\n"
              "  A randomly initialised MAR bundle (masked, diffusion head) with the KL-16 VAE decoder\n"
              "  (mar-demo: a small 64-px model for tests and demos).");
    return 0;
  }
  const std::string preset = p.get("--preset", "demo");
  if (preset.rfind("mar-", 0) == 0) {
    for (const char* option : {"--image-size", "--tokenizer"})
      if (p.has(option)) throw InvalidArgumentError(std::string("option ") + option + " does not apply to MAR presets");
    const bool demo = preset == "mar-demo";
    mar::MarConfig mar_config = demo ? mar::demo_mar_config() : mar::mar_preset(preset);
    const mar::KlVaeConfig vae_config = demo ? mar::demo_kl_vae_config() : mar::kl16_config();
    mar_config.class_num = p.get_int("--classes", mar_config.class_num);
    mar_config.num_sampling_steps = p.get("--diffusion-steps", mar_config.num_sampling_steps);
    const std::string out = p.require("--out");
    const std::string name = p.get("--name", preset + "-random");
    const nlohmann::json defaults = mar::mar_sampling_defaults(demo ? "mar-B" : preset);
    mar::write_random_mar_bundle(out, name, mar_config, vae_config, p.get_u64("--seed", 0), p.get("--dtype", "f32"),
                                 &defaults);
    std::printf("wrote %s (%s, %.1fM MAR parameters, %lld px, random weights)\n", out.c_str(), name.c_str(),
                mar::mar_parameter_count(mar_config) / 1e6,
                (long long)(mar_config.seq_h() * mar_config.patch_size * vae_config.upsampling()));
    return 0;
  }
  if (p.has("--diffusion-steps")) throw InvalidArgumentError("option --diffusion-steps applies to MAR presets only");
  if (preset.rfind("var-", 0) == 0) {
    var::VarConfig var_config;
    var::VqvaeConfig vae_config;
    if (preset == "var-demo") {
      if (p.has("--image-size")) throw InvalidArgumentError("the var-demo preset has a fixed size (64 px)");
      var_config = var::demo_var_config();
      vae_config = var::demo_vqvae_config();
      var_config.num_classes = p.get_int("--classes", var_config.num_classes);
    } else {
      var_config = var::var_preset(preset, p.get_int("--image-size", 0), p.get_int("--classes", 1000));
      vae_config = var::vqvae_preset(var_config.patch_nums);
    }
    if (p.has("--tokenizer")) throw InvalidArgumentError("option --tokenizer applies to LlamaGen presets only");
    const std::string out = p.require("--out");
    const std::string name = p.get("--name", preset + "-random");
    var::write_random_var_bundle(out, name, var_config, vae_config, p.get_u64("--seed", 0), p.get("--dtype", "f32"));
    std::printf("wrote %s (%s, %.1fM VAR parameters, %lld px, random weights)\n", out.c_str(), name.c_str(),
                var_config.parameter_count() / 1e6, (long long)vae_config.image_size());
    return 0;
  }
  llamagen::GptConfig gpt;
  llamagen::VqConfig vq;
  if (preset == "demo") {
    gpt = llamagen::demo_gpt_config();
    vq = llamagen::demo_vq_config();
  } else {
    vq = llamagen::vq_preset(p.get("--tokenizer", "VQ-16"));
    gpt = llamagen::gpt_preset(preset, p.get_int("--image-size", 256), vq.downsample(), p.get_int("--classes", 1000),
                               vq.codebook_size);
  }
  const std::string out = p.require("--out");
  const std::string name = p.get("--name", preset == "demo" ? "llamagen-demo" : "llamagen-" + preset + "-random");
  llamagen::write_random_llamagen_bundle(out, name, gpt, vq, p.get_u64("--seed", 0), p.get("--dtype", "f32"));
  std::printf("wrote %s (%s, %.1fM GPT parameters, random weights)\n", out.c_str(), name.c_str(),
              gpt.parameter_count() / 1e6);
  return 0;
}

}  // namespace kvs::cli
