#include "engine/models/var/var_family.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/cache/policies/scalekv_policy.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/torch_device.h"
#include "engine/generation/scale/calibration_report.h"
#include "engine/generation/scale/scale_stream.h"
#include "engine/io/model_bundle.h"
#include "engine/models/var/hack_calibration.h"
#include "engine/models/var/scalekv_calibration.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_config.h"
#include "engine/models/var/var_conformance.h"
#include "engine/models/var/var_converter.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_random_init.h"
#include "engine/models/var/var_run.h"
#include "engine/models/var/var_similarity_calibration.h"
#include "engine/session/bundle_info.h"
#include "engine/session/loaded_model.h"
#include "engine/session/model_summary.h"

namespace kvs::var {
namespace {

// Every layer has as many KV heads as query heads; no condition entries (the
// class embedding is the first scale's input, not a cached token).
int64_t kv_bytes_per_token(const VarConfig& c) { return 2 * c.depth * c.num_heads * c.head_dim() * 4; }

// The calibrations a spec is checked with before a run: HeatKV's comes later
// (the bundle's, or one measured on first use), so a stand-in of the right
// geometry checks its parameters now; AMS-KV's is the bundle's own, so a corrupt
// or mismatched one is refused now (read only when an amskv spec asks for it);
// ScaleKV and HACK check theirs with their own stand-ins.
class CheckCalibrations : public FixedCalibrations {
 public:
  CheckCalibrations(const PolicyContext& context, std::string bundle_dir) : bundle_dir_(std::move(bundle_dir)) {
    attention = std::make_shared<const ScaleAttentionProfile>(ScaleAttentionProfile::uniform(context));
  }
  std::shared_ptr<const AmsKvCalibration> amskv_similarity() override { return stored_amskv_calibration(bundle_dir_); }

 private:
  std::string bundle_dir_;
};

class VarFamily : public ModelFamily {
 public:
  const FamilyDescription& description() const override { return var_description(); }

  std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const override {
    // The calibrations (HeatKV's, AMS-KV's, ScaleKV's, HACK's) stay with the loaded model: read or
    // measured when a policy first needs them.
    auto calibrations = std::make_shared<VarCalibrations>();
    return std::make_unique<LoadedModelOf<VarModel>>(
        VarModel::load(bundle, torch_device(device), torch_dtype(device)),
        [calibrations](const VarModel& model, const GenerationRequest& request, const RunContext& context) {
          return run_scale_generation(model, *calibrations, request, context);
        });
  }

  void summarize(const io::ModelBundle& bundle, ModelSummary& s) const override {
    // Next-scale: the grid is the final scale's token map; no condition entries.
    const nlohmann::json& m = bundle.manifest;
    const VarConfig c = var_config_from_json(m.at("architecture").at("var"));
    const VqvaeConfig v = vqvae_config_from_json(m.at("tokenizer"));
    s.n_layer = c.depth;
    s.n_head = c.num_heads;
    s.kv_heads = c.num_heads;
    s.head_dim = c.head_dim();
    s.grid = c.final_grid();
    s.scale_sides = c.patch_nums;
    s.condition_tokens = 0;
    s.num_classes = c.num_classes;
    s.image_size = v.image_size();
    s.gpt_parameters = c.parameter_count();
    s.kv_bytes_per_token = kv_bytes_per_token(c);
    std::ostringstream a;
    a << "VAR depth " << c.depth << ", width " << c.embed_dim << ", " << c.num_heads << " heads";
    if (c.shared_aln) a << " (shared AdaLN)";
    a << "; " << c.scales() << " scales up to " << s.grid << "x" << s.grid << " (" << c.total_tokens() << " tokens), "
      << s.image_size << " px; VQVAE " << v.vocab_size << " codes";
    s.architecture = a.str();
  }

  BundleInfo inspect(const io::ModelBundle& bundle) const override {
    // Loading on the CPU validates every tensor name, shape and dtype.
    const auto model = VarModel::load(bundle, c10::Device(c10::kCPU));
    const auto& c = model.transformer->config();
    const auto& v = model.vqvae->config();
    const StoredWeights stored = stored_weights(bundle.weights_path(), {"var."});
    const int64_t var_params = stored.params[0], vae_params = stored.params[1];
    const int64_t kv = kv_bytes_per_token(c);
    const int64_t tokens = c.total_tokens();
    BundleInfo info;
    info.json = {{"var", to_json(c)},
                 {"tokenizer", to_json(v)},
                 {"var_parameters", var_params},
                 {"vqvae_decoder_parameters", vae_params},
                 {"image_size", v.image_size()},
                 {"scales", c.scales()},
                 {"tokens_per_image", tokens},
                 {"phi_schedule", v.phi_schedule()},
                 {"kv_bytes_per_token_f32", kv},
                 {"kv_bytes_per_token_f16", kv / 2},
                 {"weights_dtypes", stored.dtypes}};
    info.lines = {
        {"transformer",
         format_text("depth %lld, width %lld, %lld heads (head_dim %lld), mlp %lld%s%s\n"
                     "vocab %lld, %lld classes, %lld scales (%s) = %lld tokens",
                     (long long)c.depth, (long long)c.embed_dim, (long long)c.num_heads, (long long)c.head_dim(),
                     (long long)c.mlp_hidden(), c.shared_aln ? ", shared AdaLN" : "",
                     c.attn_l2_norm ? ", L2-normalised attention" : "", (long long)c.vocab_size,
                     (long long)c.num_classes, (long long)c.scales(), join_ints(c.patch_nums).c_str(),
                     (long long)tokens)},
        {"tokenizer",
         format_text("multi-scale VQVAE codebook %lldx%lld, ch %lld, %zu levels (%lldx), phi %lld (schedule %s)",
                     (long long)v.vocab_size, (long long)v.z_channels, (long long)v.ch, v.ch_mult.size(),
                     (long long)v.downsample(), (long long)v.phi_count(), join_ints(v.phi_schedule()).c_str())},
        {"image", format_text("%lldx%lld px", (long long)v.image_size(), (long long)v.image_size())},
        {"parameters", format_text("VAR %.2fM, VQVAE decoder %.2fM (weights %s)", var_params / 1e6, vae_params / 1e6,
                                   stored.dtypes.c_str())},
        {"KV cache", kv_cache_text(kv, tokens)},
    };
    return info;
  }

  std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const override {
    VarConvertOptions o;
    o.checkpoint = options.require("--checkpoint");
    o.tokenizer = options.require("--tokenizer");
    o.out_dir = options.require("--out");
    o.name = options.get("--name", "");
    o.num_heads = options.get_int("--n-head", 0);
    if (options.has("--patch-nums")) o.patch_nums = options.get_int_list("--patch-nums");
    if (options.has("--image-size")) o.patch_nums = patch_nums_for_resolution(options.get_int("--image-size", 256));
    o.weights_dtype = options.get("--dtype", "keep");
    options.refuse_unused("--family var");
    const auto report = convert_var_checkpoint(o, progress);
    return format_text(
        "wrote %s: %lld tensors, %.1f MiB (VAR depth %lld, width %lld, %lld heads%s, %lld scales up to "
        "%lldx%lld; dropped %zu unused tensors)",
        o.out_dir.c_str(), (long long)report.tensors_written, report.bytes_written / 1048576.0,
        (long long)report.var.depth, (long long)report.var.embed_dim, (long long)report.var.num_heads,
        report.var.shared_aln ? ", shared AdaLN" : "", (long long)report.var.scales(),
        (long long)report.var.final_grid(), (long long)report.var.final_grid(), report.dropped_keys.size());
  }

  RandomArchitecture random_architecture(const std::string& text) const override {
    // "var-demo" or "var-<dNN>[@<pixels>]" (var_preset; pixels 256 or 512).
    VarConfig var_config;
    VqvaeConfig vae_config;
    if (text == "var-demo") {
      var_config = demo_var_config();
      vae_config = demo_vqvae_config();
    } else {
      if (text.rfind("var-", 0) != 0) throw InvalidArgumentError("--random: unknown architecture '" + text + "'");
      std::string size = text.substr(4);
      int64_t image_size = 0;
      const auto at = size.find('@');
      if (at != std::string::npos) {
        const std::string px = size.substr(at + 1);
        size = size.substr(0, at);
        if (px.empty() || px.size() > 5 || px.find_first_not_of("0123456789") != std::string::npos)
          throw InvalidArgumentError("--random: bad image size '" + px + "' in '" + text + "'");
        image_size = std::stoll(px);
      }
      try {
        var_config = var_preset(size, image_size);
      } catch (const InvalidArgumentError& e) {
        throw InvalidArgumentError("--random: " + std::string(e.what()) + " in '" + text +
                                   "' (expected var-demo or var-<d16|d20|d24|d30|d36>[@256|512])");
      }
      vae_config = vqvae_preset(var_config.patch_nums);
    }
    const std::string name = text + "-random";
    RandomArchitecture arch;
    arch.manifest = var_manifest(name, var_config, vae_config, nlohmann::json::object());
    arch.write = [name, var_config, vae_config](const std::string& dir, uint64_t seed, const std::string& dtype) {
      write_random_var_bundle(dir, name, var_config, vae_config, seed, dtype);
    };
    return arch;
  }

  void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck& check) const override {
    const VarConfig config = var_config_from_json(bundle.manifest.at("architecture").at("var"));
    // CFG rows unless cfg is 0.
    PolicyContext context = scale_policy_context(config, check.batch, check.cfg_scale != 0.0, check.seed);
    context.calibrations = std::make_shared<CheckCalibrations>(context, bundle.dir);
    scale::make_scale_policy(spec, context);
    // HeatKV's calibration_images needs the model's classes.
    heatkv_calibration_images(spec, config.num_classes);
  }

  ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                         const DeviceChoice& device) const override {
    return run_var_conformance(manifest, dir, torch_device(device));
  }

  std::string write_random(const std::string& preset, const FamilyOptions& options) const override {
    VarConfig var_config;
    VqvaeConfig vae_config;
    if (preset == "var-demo") {
      if (options.has("--image-size")) throw InvalidArgumentError("the var-demo preset has a fixed size (64 px)");
      var_config = demo_var_config();
      vae_config = demo_vqvae_config();
      var_config.num_classes = options.get_int("--classes", var_config.num_classes);
    } else {
      var_config = var_preset(preset, options.get_int("--image-size", 0), options.get_int("--classes", 1000));
      vae_config = vqvae_preset(var_config.patch_nums);
    }
    const std::string out = options.require("--out");
    const std::string name = options.get("--name", preset + "-random");
    const uint64_t seed = options.get_u64("--seed", 0);
    const std::string dtype = options.get("--dtype", "f32");
    options.refuse_unused("preset " + preset);
    write_random_var_bundle(out, name, var_config, vae_config, seed, dtype);
    return format_text("wrote %s (%s, %.1fM VAR parameters, %lld px, random weights)", out.c_str(), name.c_str(),
                       var_config.parameter_count() / 1e6, (long long)vae_config.image_size());
  }

  std::string calibrate(const io::ModelBundle& bundle, const DeviceChoice& device,
                        const CalibrationRequest& request) const override {
    if (!scale::is_calibrated_scale_policy(request.policy)) return ModelFamily::calibrate(bundle, device, request);
    const bool scalekv = request.policy == "scalekv", amskv = request.policy == "amskv";
    if (!amskv && request.demanding_fraction != 0)
      throw InvalidArgumentError("option --demanding-fraction applies to --policy amskv");
    const double fraction = request.demanding_fraction != 0 ? request.demanding_fraction : 1.0 / 6.0;
    if (!(fraction > 0 && fraction < 1))
      throw InvalidArgumentError("option --demanding-fraction must be in (0, 1), e.g. 1/6");
    const VarModel model = VarModel::load(bundle, torch_device(device), torch_dtype(device));
    const int64_t num_classes = model.transformer->config().num_classes;
    if (!request.image_size.empty())
      throw InvalidArgumentError("VAR models have one image size: calibrate takes no --image-size");
    // 4 classes by default; ScaleKV's 10 (the paper's number of calibration prompts).
    const int64_t images = request.images > 0 ? request.images : scalekv ? 10 : 4;
    const std::vector<int64_t> classes = request.classes.empty() ? spread_classes(num_classes, images)
                                                                 : request.classes;
    for (int64_t c : classes)
      if (c < 0 || c >= num_classes)
        throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: model " + model.name + " has " +
                                   std::to_string(num_classes) + " classes (0.." + std::to_string(num_classes - 1) +
                                   ")");
    ScaleParams params;
    params.cfg = request.cfg >= 0 ? request.cfg : 1.5;
    params.seed = request.seed;
    const std::string out = request.out.empty() ? bundle.dir + "/" + scale::calibration_file(request.policy)
                                                : request.out;
    const auto start = std::chrono::steady_clock::now();
    scale::ScaleCalibrationMeasures measure;
    measure.heatkv = [&] { return calibrate_scale_attention(model, classes, params); };
    measure.scalekv = [&] { return calibrate_attention_selectivity(model, classes, params, ScaleKvOptions{}.top_k); };
    measure.hack = [&] { return calibrate_head_variance(model, classes, params); };
    measure.amskv = [&] { return calibrate_key_similarity(model, classes, params, fraction); };
    // AMS-KV's file records the command as given, or one that repeats it (the classes and CFG as used).
    const std::string command =
        !request.command.empty()
            ? request.command
            : format_text(
                  "kvstudio-cli calibrate --policy amskv --model %s --classes %s --seed %llu --cfg %g "
                  "--demanding-fraction %.6g",
                  bundle.dir.c_str(), join_ints(classes).c_str(), static_cast<unsigned long long>(request.seed),
                  params.cfg, fraction);
    const std::string table = scale::write_calibration(request.policy, out, measure, command);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return format_text("calibrated %s on %zu image(s) in %.1f s (%s): wrote %s\n", model.name.c_str(), classes.size(),
                       seconds, device.description.c_str(), out.c_str()) +
           table;
  }
};

}  // namespace

const ModelFamily& var_family() {
  static const VarFamily family;
  return family;
}

}  // namespace kvs::var
