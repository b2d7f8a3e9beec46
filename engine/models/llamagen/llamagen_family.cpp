#include "engine/models/llamagen/llamagen_family.h"

#include <algorithm>
#include <sstream>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/core/torch_device.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/model_bundle.h"
#include "engine/models/llamagen/llamagen_config.h"
#include "engine/models/llamagen/llamagen_conformance.h"
#include "engine/models/llamagen/llamagen_converter.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/session/bundle_info.h"
#include "engine/session/loaded_model.h"
#include "engine/session/model_summary.h"

namespace kvs::llamagen {
namespace {

int64_t kv_bytes_per_token(const GptConfig& g) { return 2 * g.n_layer * g.kv_heads() * g.head_dim() * 4; }

class LlamaGenFamily : public ModelFamily {
 public:
  const FamilyDescription& description() const override { return llamagen_description(); }

  std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const override {
    return std::make_unique<LoadedModelOf<LlamaGenModel>>(LlamaGenModel::load(bundle, torch_device(device),
                                                                              torch_dtype(device)),
                                                          run_raster_generation);
  }

  void summarize(const io::ModelBundle& bundle, ModelSummary& s) const override {
    const nlohmann::json& m = bundle.manifest;
    const GptConfig g = gpt_config_from_json(m.at("architecture").at("gpt"));
    g.validate();
    VqConfig v;
    if (m.contains("tokenizer")) v = vq_config_from_json(m.at("tokenizer"));
    s.n_layer = g.n_layer;
    s.n_head = g.n_head;
    s.kv_heads = g.kv_heads();
    s.head_dim = g.head_dim();
    s.grid = g.grid_size();
    s.condition_tokens = g.cls_token_num;
    s.num_classes = g.num_classes;
    s.image_size = g.grid_size() * v.downsample();
    s.gpt_parameters = g.parameter_count();
    s.kv_bytes_per_token = kv_bytes_per_token(g);
    std::ostringstream a;
    a << "GPT dim " << g.dim << " x " << g.n_layer << " layers, " << g.n_head << " heads";
    if (g.kv_heads() != g.n_head) a << " (" << g.kv_heads() << " KV)";
    a << "; " << s.grid << "x" << s.grid << " tokens, " << s.image_size << " px; VQ " << v.codebook_size << " codes";
    s.architecture = a.str();
  }

  BundleInfo inspect(const io::ModelBundle& bundle) const override {
    // Loading on the CPU validates every tensor name, shape and dtype.
    const auto model = LlamaGenModel::load(bundle, c10::Device(c10::kCPU));
    const auto& g = model.gpt->config();
    const auto& v = model.vq->config();
    const StoredWeights stored = stored_weights(bundle.weights_path(), {"gpt."});
    const int64_t gpt_params = stored.params[0], vq_params = stored.params[1];
    const int64_t kv = kv_bytes_per_token(g);
    const int64_t image_px = g.grid_size() * v.downsample();
    BundleInfo info;
    info.json = {{"gpt", to_json(g)},
                 {"tokenizer", to_json(v)},
                 {"gpt_parameters", gpt_params},
                 {"tokenizer_decoder_parameters", vq_params},
                 {"image_size", image_px},
                 {"tokens_per_image", g.block_size},
                 {"kv_bytes_per_token_f32", kv},
                 {"kv_bytes_per_token_f16", kv / 2},
                 {"weights_dtypes", stored.dtypes}};
    info.lines = {
        {"gpt", format_text("dim %lld, %lld layers, %lld heads (%lld kv heads, head_dim %lld), ffn %lld\n"
                            "vocab %lld, %lld classes, %lldx%lld tokens",
                            (long long)g.dim, (long long)g.n_layer, (long long)g.n_head, (long long)g.kv_heads(),
                            (long long)g.head_dim(), (long long)g.ffn_hidden_dim(), (long long)g.vocab_size,
                            (long long)g.num_classes, (long long)g.grid_size(), (long long)g.grid_size())},
        {"tokenizer",
         format_text("VQ codebook %lldx%lld (l2-norm %s), z %lld, ch %lld, %zu levels (%lldx)",
                     (long long)v.codebook_size, (long long)v.codebook_embed_dim, v.codebook_l2_norm ? "on" : "off",
                     (long long)v.z_channels, (long long)v.ch, v.decoder_ch_mult.size(), (long long)v.downsample())},
        {"image", format_text("%lldx%lld px", (long long)image_px, (long long)image_px)},
        {"parameters", format_text("GPT %.2fM, decoder %.2fM (weights %s)", gpt_params / 1e6, vq_params / 1e6,
                                   stored.dtypes.c_str())},
        {"KV cache", kv_cache_text(kv, g.block_size + g.cls_token_num)},
    };
    return info;
  }

  std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const override {
    ConvertOptions o;
    o.checkpoint = options.require("--checkpoint");
    o.tokenizer = options.require("--tokenizer");
    o.out_dir = options.require("--out");
    o.name = options.get("--name", "");
    o.image_size = options.get_int("--image-size", 0);
    o.n_head = options.get_int("--n-head", 0);
    o.weights_dtype = options.get("--dtype", "keep");
    options.refuse_unused("--family llamagen");
    const auto report = convert_llamagen_checkpoint(o, progress);
    return format_text(
        "wrote %s: %lld tensors, %.1f MiB (GPT dim %lld x %lld layers, %lld heads, %lldx%lld tokens; "
        "dropped %zu unused tokenizer tensors%s)",
        o.out_dir.c_str(), (long long)report.tensors_written, report.bytes_written / 1048576.0,
        (long long)report.gpt.dim, (long long)report.gpt.n_layer, (long long)report.gpt.n_head,
        (long long)report.gpt.grid_size(), (long long)report.gpt.grid_size(), report.dropped_keys.size(),
        report.encoder_kept ? "; kept the VQ encoder, so the bundle can finish pictures" : "");
  }

  RandomArchitecture random_architecture(const std::string& text) const override {
    // "llamagen-demo" or "llamagen-<SIZE>[@<pixels>]" (SIZE as in gpt_preset without "GPT-").
    std::string sizes;
    for (const auto& n : gpt_preset_names()) {
      if (!sizes.empty()) sizes += '|';
      sizes += n.substr(4);
    }
    const std::string expected = "expected llamagen-demo or llamagen-<" + sizes + ">@<image size, e.g. 256 or 384>";
    GptConfig gpt;
    VqConfig vq;
    if (text == "llamagen-demo") {
      gpt = demo_gpt_config();
      vq = demo_vq_config();
    } else {
      const std::string prefix = "llamagen-";
      if (text.rfind(prefix, 0) != 0)
        throw InvalidArgumentError("--random: unknown architecture '" + text + "' (" + expected + ")");
      std::string size = text.substr(prefix.size());
      int64_t image_size = 256;
      const auto at = size.find('@');
      if (at != std::string::npos) {
        const std::string px = size.substr(at + 1);
        size = size.substr(0, at);
        if (px.empty() || px.size() > 5 || px.find_first_not_of("0123456789") != std::string::npos)
          throw InvalidArgumentError("--random: bad image size '" + px + "' in '" + text + "' (" + expected + ")");
        image_size = std::stoll(px);
      }
      const auto names = gpt_preset_names();
      if (std::find(names.begin(), names.end(), "GPT-" + size) == names.end())
        throw InvalidArgumentError("--random: unknown architecture '" + text + "' (" + expected + ")");
      vq = vq_preset("VQ-16");
      const int64_t down = vq.downsample();
      if (image_size <= 0 || image_size % down != 0 || image_size > 2048)
        throw InvalidArgumentError("--random: image size " + std::to_string(image_size) + " in '" + text +
                                   "' must be a positive multiple of " + std::to_string(down) + " up to 2048");
      gpt = gpt_preset("GPT-" + size, image_size, down, 1000, vq.codebook_size);
    }
    const std::string name = text + "-random";
    RandomArchitecture arch;
    arch.manifest = llamagen_manifest(name, gpt, vq, nlohmann::json::object());
    arch.write = [name, gpt, vq](const std::string& dir, uint64_t seed, const std::string& dtype) {
      write_random_llamagen_bundle(dir, name, gpt, vq, seed, dtype);
    };
    return arch;
  }

  void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck& check) const override {
    const GptConfig gpt = gpt_config_from_json(bundle.manifest.at("architecture").at("gpt"));
    make_policy(spec, raster_policy_context(gpt, check.batch, check.cfg_scale > 1.0, check.seed));
  }

  ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                         const DeviceChoice& device) const override {
    return run_llamagen_conformance(manifest, dir, torch_device(device));
  }

  std::string write_random(const std::string& preset, const FamilyOptions& options) const override {
    GptConfig gpt;
    VqConfig vq;
    if (preset == "demo") {
      gpt = demo_gpt_config();
      vq = demo_vq_config();
      gpt.num_classes = options.get_int("--classes", gpt.num_classes);
    } else {
      vq = vq_preset(options.get("--tokenizer", "VQ-16"));
      gpt = gpt_preset(preset, options.get_int("--image-size", 256), vq.downsample(),
                       options.get_int("--classes", 1000), vq.codebook_size);
    }
    const std::string out = options.require("--out");
    const std::string name = options.get("--name",
                                         preset == "demo" ? "llamagen-demo" : "llamagen-" + preset + "-random");
    const uint64_t seed = options.get_u64("--seed", 0);
    const std::string dtype = options.get("--dtype", "f32");
    const bool with_encoder = options.get("--vq-encoder", "no") == "yes";
    options.refuse_unused("preset " + preset);
    write_random_llamagen_bundle(out, name, gpt, vq, seed, dtype);
    // A separate draw (seed + 1), so that a bundle's weights do not depend on it.
    if (with_encoder)
      vq::write_bundle_vq_encoder(out, vq, vq::random_vq_encoder(vq, seed + 1), io::parse_weights_dtype(dtype));
    return format_text("wrote %s (%s, %.1fM GPT parameters, random weights)", out.c_str(), name.c_str(),
                       gpt.parameter_count() / 1e6);
  }
};

}  // namespace

const ModelFamily& llamagen_family() {
  static const LlamaGenFamily family;
  return family;
}

}  // namespace kvs::llamagen
