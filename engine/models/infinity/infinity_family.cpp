#include "engine/models/infinity/infinity_family.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <sstream>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/cache/policies/scalekv_policy.h"
#include "engine/core/errors.h"
#include "engine/core/torch_device.h"
#include "engine/generation/scale/calibration_report.h"
#include "engine/generation/scale/scale_stream.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/process_memory.h"
#include "engine/models/infinity/infinity_calibration.h"
#include "engine/models/infinity/infinity_conformance.h"
#include "engine/models/infinity/infinity_converter.h"
#include "engine/models/infinity/infinity_model.h"
#include "engine/models/infinity/infinity_random_init.h"
#include "engine/models/infinity/infinity_run.h"
#include "engine/session/bundle_info.h"
#include "engine/session/loaded_model.h"
#include "engine/session/model_summary.h"
#include "engine/text/sentencepiece_tokenizer.h"

namespace kvs::infinity {
namespace {

InfinityModelConfig config_of(const io::ModelBundle& bundle) {
  return infinity_model_config_from_json(bundle.manifest.at("architecture"), bundle.manifest.at("tokenizer"));
}

// The self-attention cache per token (K and V, every layer) in float32; the
// text cross-attention is not a cache and is counted apart.
int64_t kv_bytes_per_token_f32(const InfinityConfig& c) { return 2 * c.depth * c.embed_dim * 4; }

// Elements of every named tensor of a weight list.
int64_t elements(const std::vector<std::pair<std::string, std::vector<int64_t>>>& shapes) {
  int64_t n = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t e = 1;
    for (const int64_t s : shape) e *= s;
    n += e;
  }
  return n;
}

int64_t transformer_parameters(const InfinityConfig& c) { return elements(InfinityTransformer::weight_shapes(c)); }
int64_t t5_parameters(const T5Config& c) { return elements(T5Encoder::weight_names(c)); }

void refuse_if_too_big(const io::ModelBundle& bundle, RunDtype dtype) {
  const InfinityModelConfig c = config_of(bundle);
  const int64_t need = (transformer_parameters(c.transformer) + t5_parameters(c.t5)) * run_dtype_bytes(dtype);
  const int64_t available = system_available_bytes();
  if (available <= 0 || need <= available) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const std::string hint = dtype == RunDtype::F32 ? " (--dtype bf16 halves it)" : "";
  throw InvalidArgumentError(
      format_text("model %s needs about %.1f GiB for its weights in %s, but only %.1f GiB of memory is available%s",
                  bundle.name().c_str(), need / gib, run_dtype_name(dtype).c_str(), available / gib, hint.c_str()));
}

std::string sizes_text(const InfinityModelConfig& c) {
  std::string out;
  for (const InfinityImageSize& s : infinity_image_sizes(c)) out += (out.empty() ? "" : ", ") + s.text();
  return out;
}

class InfinityFamily : public ModelFamily {
 public:
  const FamilyDescription& description() const override { return infinity_description(); }

  std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const override {
    if (device.kind == DeviceKind::Cpu) refuse_if_too_big(bundle, device.dtype);
    // The calibrations stay with the loaded model: the bundle's for the run's image size, or measured when first
    // needed.
    auto calibrations = std::make_shared<InfinityCalibrations>();
    return std::make_unique<LoadedModelOf<InfinityModel>>(
        InfinityModel::load(bundle, torch_device(device), torch_dtype(device)),
        [calibrations](const InfinityModel& model, const GenerationRequest& request, const RunContext& context) {
          return run_infinity_generation(model, *calibrations, request, context);
        });
  }

  void summarize(const io::ModelBundle& bundle, ModelSummary& s) const override {
    const InfinityModelConfig c = config_of(bundle);
    const InfinityConfig& t = c.transformer;
    const InfinityImageSize size = parse_infinity_image_size(c, "");
    const InfinitySchedule schedule = schedule_of(size);
    s.n_layer = t.depth;
    s.n_head = t.num_heads;
    s.kv_heads = t.num_heads;
    s.head_dim = t.head_dim();
    s.grid = schedule.grids.back()[0];
    s.condition_tokens = 0;
    s.num_classes = 0;
    s.image_size = size.width;
    s.gpt_parameters = transformer_parameters(t);
    s.kv_bytes_per_token = kv_bytes_per_token_f32(t);
    for (const Grid& g : schedule.grids) s.scale_sides.push_back(g[0]);
    for (const InfinityImageSize& other : infinity_image_sizes(c)) s.image_sizes.push_back(other.text());
    std::ostringstream a;
    a << "Infinity " << t.embed_dim << " x " << t.depth << " blocks, " << t.num_heads << " heads; T5 " << c.t5.d_model
      << " x " << c.t5.num_layers << "; " << schedule.grids.size() << " scales to " << schedule.grids.back()[0] << "x"
      << schedule.grids.back()[1] << " tokens of " << t.token_bits() << " bits; BSQ-VAE x" << c.pixels_per_token();
    s.architecture = a.str();
  }

  BundleInfo inspect(const io::ModelBundle& bundle) const override {
    const InfinityModel model = InfinityModel::load(bundle, c10::Device(c10::kCPU), at::kBFloat16);
    const InfinityModelConfig& c = model.config;
    const InfinityConfig& t = c.transformer;
    const InfinitySchedule schedule = schedule_of(parse_infinity_image_size(c, ""));
    const int64_t tokens = schedule_tokens(schedule.grids);
    const StoredWeights stored = stored_weights(bundle.weights_path(), {"infinity.", "t5.", "vae."});
    const int64_t kv = kv_bytes_per_token_f32(t);
    BundleInfo info;
    info.json = {{"infinity", t.to_json()},
                 {"t5", c.t5.to_json()},
                 {"vae", c.vae.to_json()},
                 {"pixel_budget", c.pixel_budget},
                 {"parameters", transformer_parameters(t)},
                 {"t5_parameters", t5_parameters(c.t5)},
                 {"image_sizes", sizes_text(c)},
                 {"tokens_per_image", tokens},
                 {"tokenizer_vocab", model.tokenizer->vocab_size()},
                 {"kv_bytes_per_token_f32", kv},
                 {"kv_bytes_per_token_f16", kv / 2},
                 {"weights_dtypes", stored.dtypes}};
    info.lines = {
        {"transformer", format_text("Infinity width %lld, %lld blocks, %lld heads (head_dim %lld), ffn %lld, "
                                    "%lld bits per token%s",
                                    (long long)t.embed_dim, (long long)t.depth, (long long)t.num_heads,
                                    (long long)t.head_dim(), (long long)t.mlp_hidden(), (long long)t.token_bits(),
                                    t.spatial_patchify ? " (2x2 patchified)" : "")},
        {"text encoder", format_text("T5 width %lld, %lld layers, %lld heads, vocab %lld; tokenizer %lld pieces "
                                     "(tokenizer/spiece.model)",
                                     (long long)c.t5.d_model, (long long)c.t5.num_layers, (long long)c.t5.num_heads,
                                     (long long)c.t5.vocab_size, (long long)model.tokenizer->vocab_size())},
        {"BSQ-VAE", format_text("%lld bits, patch %lld, base %lld", (long long)c.vae.codebook_dim,
                                (long long)c.vae.patch_size, (long long)c.vae.base_ch)},
        {"image", format_text("%s: %zu scales, %lld tokens; sizes %s", c.pixel_budget.c_str(), schedule.grids.size(),
                              (long long)tokens, sizes_text(c).c_str())},
        {"parameters", format_text("%.2fM transformer + %.2fM T5 (weights %s)", transformer_parameters(t) / 1e6,
                                   t5_parameters(c.t5) / 1e6, stored.dtypes.c_str())},
        {"KV cache", kv_cache_text(kv, tokens) + " (self-attention; the text cross-attention is not a cache)"},
    };
    return info;
  }

  std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const override {
    InfinityConvertOptions o;
    o.checkpoint = options.require("--checkpoint");
    o.vae = options.require("--vae");
    o.t5 = options.require("--t5");
    o.out_dir = options.require("--out");
    o.name = options.get("--name", "");
    o.weights_dtype = options.get("--dtype", "keep");
    o.pixel_budget = options.get("--pixel-budget", "1M");
    options.refuse_unused("--family infinity");
    const InfinityConvertReport r = convert_infinity_checkpoint(o, progress);
    const InfinityConfig& t = r.config.transformer;
    return format_text(
        "wrote %s: %lld tensors, %.1f MiB (Infinity %lld x %lld blocks, %lld bits per token, T5 %lld x "
        "%lld; dropped %lld tensors generation never uses)",
        o.out_dir.c_str(), (long long)r.tensors_written, r.bytes_written / 1048576.0, (long long)t.embed_dim,
        (long long)t.depth, (long long)t.token_bits(), (long long)r.config.t5.d_model,
        (long long)r.config.t5.num_layers, (long long)r.tensors_dropped);
  }

  RandomArchitecture random_architecture(const std::string& text) const override {
    const InfinityModelConfig config = random_infinity_config(text);
    const std::string name = text + "-random";
    RandomArchitecture arch;
    arch.manifest = infinity_manifest(name, config, nlohmann::json::object());
    arch.write = [name, config](const std::string& dir, uint64_t seed, const std::string& dtype) {
      write_random_infinity_bundle(dir, name, config, seed, dtype);
    };
    return arch;
  }

  void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck& check) const override {
    const InfinityModelConfig c = config_of(bundle);
    const InfinitySchedule schedule = schedule_of(parse_infinity_image_size(c, ""));
    PolicyContext context = scale_policy_context(c.transformer, schedule, check.batch, check.cfg_scale != 1.0,
                                                 check.seed);
    // Stand-ins for the calibrations a run measures on first use.
    auto stand_ins = std::make_shared<FixedCalibrations>();
    stand_ins->attention = std::make_shared<const ScaleAttentionProfile>(ScaleAttentionProfile::uniform(context));
    context.calibrations = stand_ins;
    scale::make_scale_policy(spec, context);
    if (spec.name == "heatkv") {
      // calibration_images counts prompts here (infinity_calibration.h), refused beyond the list by its own message.
      const int64_t images = heatkv_calibration_images(spec, std::numeric_limits<int32_t>::max());
      if (images > 0) calibration_prompts(images);
    }
  }

  std::string calibrate(const io::ModelBundle& bundle, const DeviceChoice& device,
                        const CalibrationRequest& request) const override {
    if (!scale::is_calibrated_scale_policy(request.policy)) return ModelFamily::calibrate(bundle, device, request);
    const bool amskv = request.policy == "amskv";
    if (!request.classes.empty())
      throw InvalidArgumentError("Infinity calibrates on prompts, not classes: --images N takes the first N of its " +
                                 std::to_string(kInfinityCalibrationPromptList) + " calibration prompts");
    if (!amskv && request.demanding_fraction != 0)
      throw InvalidArgumentError("option --demanding-fraction applies to --policy amskv");
    const double fraction = request.demanding_fraction != 0 ? request.demanding_fraction : 1.0 / 6.0;
    InfinityCalibrationSet set;
    set.prompts = request.images > 0 ? request.images : kInfinityCalibrationPrompts;
    calibration_prompts(set.prompts);  // refuses more than the list holds before the model loads
    // The CFG the bundle's runs default to (what generate and the window use), so that they find the file.
    set.cfg = request.cfg >= 0 ? request.cfg
                               : bundle.manifest.value("sampling_defaults", nlohmann::json::object())
                                     .value("cfg_scale", InfinityParams{}.cfg.front());
    set.seed = request.seed;
    const InfinityModelConfig config = config_of(bundle);
    const InfinityImageSize size = parse_infinity_image_size(config, request.image_size);
    const InfinityModel model = InfinityModel::load(bundle, torch_device(device), torch_dtype(device));
    const std::string out = request.out.empty()
                                ? stored_calibration_path(bundle.dir, scale::calibration_file(request.policy), size)
                                : request.out;
    const auto start = std::chrono::steady_clock::now();
    scale::ScaleCalibrationMeasures measure;
    measure.heatkv = [&] { return calibrate_scale_attention(model, size, set); };
    measure.scalekv = [&] { return calibrate_attention_selectivity(model, size, set, ScaleKvOptions{}.top_k); };
    measure.hack = [&] { return calibrate_head_variance(model, size, set); };
    measure.amskv = [&] { return calibrate_key_similarity(model, size, set, fraction); };
    const std::string command =
        !request.command.empty()
            ? request.command
            : format_text(
                  "kvstudio-cli calibrate --policy amskv --model %s --image-size %s --images %lld --seed %llu "
                  "--cfg %g --demanding-fraction %.6g",
                  bundle.dir.c_str(), size.text().c_str(), static_cast<long long>(set.prompts),
                  static_cast<unsigned long long>(set.seed), set.cfg, fraction);
    const std::string table = scale::write_calibration(request.policy, out, measure, command);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return format_text("calibrated %s at %s on %lld prompt(s) at CFG %g in %.1f s (%s): wrote %s\n", model.name.c_str(),
                       size.text().c_str(), static_cast<long long>(set.prompts), set.cfg, seconds,
                       device.description.c_str(), out.c_str()) +
           table;
  }

  ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                         const DeviceChoice& device) const override {
    return run_infinity_conformance(manifest, dir, torch_device(device));
  }

  std::string write_random(const std::string& preset, const FamilyOptions& options) const override {
    const InfinityModelConfig config = random_infinity_config(preset);
    const std::string out = options.require("--out");
    const std::string name = options.get("--name", preset + "-random");
    const uint64_t seed = options.get_u64("--seed", 0);
    const std::string dtype = options.get("--dtype",
                                          preset == "infinity-tiny" || preset == "infinity-small" ? "f32" : "bf16");
    options.refuse_unused("preset " + preset);
    write_random_infinity_bundle(out, name, config, seed, dtype);
    return format_text(
        "wrote %s (%s, %.1fM transformer + %.1fM T5 parameters, random weights, a small trained "
        "SentencePiece tokenizer)",
        out.c_str(), name.c_str(), transformer_parameters(config.transformer) / 1e6, t5_parameters(config.t5) / 1e6);
  }
};

}  // namespace

const ModelFamily& infinity_family() {
  static const InfinityFamily family;
  return family;
}

}  // namespace kvs::infinity
