#include "engine/models/mar/mar_family.h"

#include <algorithm>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/core/torch_device.h"
#include "engine/io/model_bundle.h"
#include "engine/models/mar/lazymar_policy.h"
#include "engine/models/mar/mar_config.h"
#include "engine/models/mar/mar_conformance.h"
#include "engine/models/mar/mar_converter.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/mar/mar_run.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/session/bundle_info.h"
#include "engine/session/loaded_model.h"
#include "engine/session/model_summary.h"

namespace kvs::mar {
namespace {

class MarFamily : public ModelFamily {
 public:
  const FamilyDescription& description() const override { return mar_description(); }

  std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const override {
    return std::make_unique<LoadedModelOf<MarModel>>(MarModel::load(bundle, torch_device(device), torch_dtype(device)),
                                                     run_masked_generation);
  }

  void summarize(const io::ModelBundle& bundle, ModelSummary& s) const override {
    // Masked: no KV cache; the buffer positions play the condition tokens' part.
    const nlohmann::json& m = bundle.manifest;
    const MarConfig c = mar_config_from_json(m.at("architecture").at("mar"));
    const KlVaeConfig v = kl_vae_config_from_json(m.at("tokenizer"));
    s.n_layer = c.decoder_depth;
    s.n_head = c.decoder_num_heads;
    s.kv_heads = c.decoder_num_heads;
    s.head_dim = c.decoder_embed_dim / c.decoder_num_heads;
    s.grid = c.seq_h();
    s.condition_tokens = c.buffer_size;
    s.num_classes = c.class_num;
    s.image_size = c.seq_h() * c.patch_size * v.upsampling();
    s.gpt_parameters = mar_parameter_count(c);
    s.kv_bytes_per_token = 0;
    std::ostringstream a;
    a << "MAR width " << c.encoder_embed_dim << ", " << c.encoder_depth << "+" << c.decoder_depth << " blocks, "
      << c.encoder_num_heads << " heads; diffusion head " << c.diffloss_d << " x " << c.diffloss_w << "; " << s.grid
      << "x" << s.grid << " tokens, " << s.image_size << " px; KL VAE";
    s.architecture = a.str();
  }

  BundleInfo inspect(const io::ModelBundle& bundle) const override {
    // Loading on the CPU validates every tensor name, shape and dtype.
    const auto model = MarModel::load(bundle, c10::Device(c10::kCPU));
    const auto& c = model.config();
    const auto& v = model.vae->config();
    const StoredWeights stored = stored_weights(bundle.weights_path(), {"mar.diffloss.", "mar."});
    const int64_t head_params = stored.params[0], mar_params = stored.params[1], vae_params = stored.params[2];
    const nlohmann::json defaults = bundle.manifest.value("sampling_defaults", nlohmann::json::object());
    BundleInfo info;
    info.json = {{"mar", to_json(c)},
                 {"tokenizer", to_json(v)},
                 {"transformer_parameters", mar_params},
                 {"diffusion_head_parameters", head_params},
                 {"vae_decoder_parameters", vae_params},
                 {"image_size", model.image_size()},
                 {"tokens_per_image", c.seq_len()},
                 {"diffusion_steps", model.diffusion->num_timesteps()},
                 {"sampling_defaults", defaults},
                 {"weights_dtypes", stored.dtypes}};
    info.lines = {
        {"encoder",
         format_text("%lld blocks, width %lld, %lld heads, mlp %lld; %lld buffer positions", (long long)c.encoder_depth,
                     (long long)c.encoder_embed_dim, (long long)c.encoder_num_heads, (long long)c.encoder_mlp_hidden(),
                     (long long)c.buffer_size)},
        {"decoder", format_text("%lld blocks, width %lld, %lld heads, mlp %lld", (long long)c.decoder_depth,
                                (long long)c.decoder_embed_dim, (long long)c.decoder_num_heads,
                                (long long)c.decoder_mlp_hidden())},
        {"tokens", format_text("%lldx%lld continuous tokens of %lld channels, %lld classes", (long long)c.seq_h(),
                               (long long)c.seq_w(), (long long)c.token_embed_dim(), (long long)c.class_num)},
        {"diff. head", format_text("%lld res blocks, width %lld; %lld sampling steps (respacing '%s' of 1000, cosine)",
                                   (long long)c.diffloss_d, (long long)c.diffloss_w,
                                   (long long)model.diffusion->num_timesteps(), c.num_sampling_steps.c_str())},
        {"tokenizer", format_text("KL VAE decoder, latent %lld, ch %lld, %zu levels (%lldx), latent scale %g",
                                  (long long)v.embed_dim, (long long)v.ch, v.ch_mult.size(), (long long)v.upsampling(),
                                  v.latent_scale)},
        {"image", format_text("%lldx%lld px", (long long)model.image_size(), (long long)model.image_size())},
        {"parameters", format_text("MAR %.2fM, diffusion head %.2fM, VAE decoder %.2fM (weights %s)", mar_params / 1e6,
                                   head_params / 1e6, vae_params / 1e6, stored.dtypes.c_str())},
    };
    if (!defaults.empty()) info.lines.push_back({"sampling", defaults.dump()});
    info.lines.push_back({"KV cache", "none (bidirectional attention recomputed at every step)"});
    return info;
  }

  std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const override {
    for (const char* option : {"--image-size", "--patch-nums"})
      if (options.has(option))
        throw InvalidArgumentError(std::string("option ") + option + " does not apply to --family mar");
    MarConvertOptions o;
    o.checkpoint = options.require("--checkpoint");
    o.vae = options.require("--tokenizer");
    o.out_dir = options.require("--out");
    o.name = options.get("--name", "");
    o.num_heads = options.get_int("--n-head", 0);
    o.vae_stride = options.get_int("--vae-stride", 16);
    o.num_sampling_steps = options.get("--diffusion-steps", "100");
    const std::string weights = options.get("--weights", "ema");
    if (weights != "ema" && weights != "raw") throw InvalidArgumentError("option --weights must be ema or raw");
    o.use_ema = weights == "ema";
    o.weights_dtype = options.get("--dtype", "keep");
    options.refuse_unused("--family mar");
    const auto report = convert_mar_checkpoint(o, progress);
    // report.warnings were logged by the converter already.
    return format_text(
        "wrote %s: %lld tensors, %.1f MiB (MAR width %lld, %lld+%lld blocks, %lld heads, %lldx%lld tokens, "
        "diffusion head %lld x %lld; weights \"%s\"; dropped %zu unused VAE tensors)",
        o.out_dir.c_str(), (long long)report.tensors_written, report.bytes_written / 1048576.0,
        (long long)report.mar.encoder_embed_dim, (long long)report.mar.encoder_depth,
        (long long)report.mar.decoder_depth, (long long)report.mar.encoder_num_heads, (long long)report.mar.seq_h(),
        (long long)report.mar.seq_w(), (long long)report.mar.diffloss_d, (long long)report.mar.diffloss_w,
        report.source_key.c_str(), report.dropped_keys.size());
  }

  RandomArchitecture random_architecture(const std::string& text) const override {
    // "mar-demo" (mar_random_init.h) or an official size "mar-B" | "mar-L" | "mar-H".
    const bool demo = text == "mar-demo";
    if (!demo) {
      const auto names = mar_preset_names();
      if (std::find(names.begin(), names.end(), text) == names.end()) {
        std::string known = "mar-demo";
        for (const auto& n : names) known += ", " + n;
        throw InvalidArgumentError("--random: unknown architecture '" + text + "' (MAR sizes: " + known + ")");
      }
    }
    const MarConfig mar_config = demo ? demo_mar_config() : mar_preset(text);
    const KlVaeConfig vae_config = demo ? demo_kl_vae_config() : kl16_config();
    const nlohmann::json defaults = mar_sampling_defaults(demo ? "mar-B" : text);
    const std::string name = text + "-random";
    RandomArchitecture arch;
    arch.manifest = mar_manifest(name, mar_config, vae_config, nlohmann::json::object());
    arch.manifest["sampling_defaults"] = defaults;
    arch.write = [name, mar_config, vae_config, defaults](const std::string& dir, uint64_t seed,
                                                          const std::string& dtype) {
      write_random_mar_bundle(dir, name, mar_config, vae_config, seed, dtype, &defaults);
    };
    return arch;
  }

  void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck&) const override {
    // "full" or one of LazyMAR's feature-cache specs with valid parameters.
    make_masked_feature_cache(spec, mar_config_from_json(bundle.manifest.at("architecture").at("mar")));
  }

  ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                         const DeviceChoice& device) const override {
    return run_mar_conformance(manifest, dir, torch_device(device));
  }

  std::string write_random(const std::string& preset, const FamilyOptions& options) const override {
    for (const char* option : {"--image-size", "--tokenizer"})
      if (options.has(option))
        throw InvalidArgumentError(std::string("option ") + option + " does not apply to MAR presets");
    const bool demo = preset == "mar-demo";
    MarConfig mar_config = demo ? demo_mar_config() : mar_preset(preset);
    const KlVaeConfig vae_config = demo ? demo_kl_vae_config() : kl16_config();
    mar_config.class_num = options.get_int("--classes", mar_config.class_num);
    mar_config.num_sampling_steps = options.get("--diffusion-steps", mar_config.num_sampling_steps);
    const std::string out = options.require("--out");
    const std::string name = options.get("--name", preset + "-random");
    const nlohmann::json defaults = mar_sampling_defaults(demo ? "mar-B" : preset);
    const uint64_t seed = options.get_u64("--seed", 0);
    const std::string dtype = options.get("--dtype", "f32");
    options.refuse_unused("preset " + preset);
    write_random_mar_bundle(out, name, mar_config, vae_config, seed, dtype, &defaults);
    return format_text("wrote %s (%s, %.1fM MAR parameters, %lld px, random weights)", out.c_str(), name.c_str(),
                       mar_parameter_count(mar_config) / 1e6,
                       (long long)(mar_config.seq_h() * mar_config.patch_size * vae_config.upsampling()));
  }
};

}  // namespace

const ModelFamily& mar_family() {
  static const MarFamily family;
  return family;
}

}  // namespace kvs::mar
