#include "engine/models/janus/janus_family.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/core/torch_device.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/process_memory.h"
#include "engine/models/janus/janus_conformance.h"
#include "engine/models/janus/janus_converter.h"
#include "engine/models/janus/janus_generation.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_random_init.h"
#include "engine/session/bundle_info.h"
#include "engine/session/loaded_model.h"
#include "engine/session/model_summary.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::janus {
namespace {

int64_t kv_bytes_per_token_f32(const JanusConfig& c) {
  return 2 * c.language.num_hidden_layers * c.language.num_key_value_heads * c.language.head_dim() * 4;
}

// A typical templated prompt's length, for geometry checks before a prompt is
// known (bench refuses impossible budgets before its first run).
constexpr int64_t kTypicalPromptTokens = 32;

// The bundle's architecture section (model.json "architecture.janus").
JanusConfig config_of(const io::ModelBundle& bundle) {
  return janus_config_from_json(bundle.manifest.at("architecture").at("janus"));
}

// Janus-Pro-7B is 28 GB in f32: on the CPU a model that cannot fit in the
// memory the system has free is refused before loading, with what would fit,
// instead of the kernel killing the process half way through.
void refuse_if_too_big(const io::ModelBundle& bundle, RunDtype dtype) {
  const JanusConfig c = config_of(bundle);
  const int64_t need = c.parameter_count() * run_dtype_bytes(dtype);
  const int64_t available = system_available_bytes();
  if (available <= 0 || need <= available) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::string hint = dtype == RunDtype::F32 ? " (--dtype bf16 halves it)" : "";
  throw InvalidArgumentError(
      format_text("model %s needs about %.1f GiB for its weights in %s, but only %.1f GiB of "
                  "memory is available%s",
                  bundle.name().c_str(), need / gib, run_dtype_name(dtype).c_str(), available / gib, hint.c_str()));
}

class JanusFamily : public ModelFamily {
 public:
  const FamilyDescription& description() const override { return janus_description(); }

  std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const override {
    if (device.kind == DeviceKind::Cpu) refuse_if_too_big(bundle, device.dtype);
    return std::make_unique<LoadedModelOf<JanusModel>>(JanusModel::load(bundle, torch_device(device),
                                                                        torch_dtype(device)),
                                                       run_prompt_generation);
  }

  void summarize(const io::ModelBundle& bundle, ModelSummary& s) const override {
    const JanusConfig c = config_of(bundle);
    const LanguageConfig& l = c.language;
    s.n_layer = l.num_hidden_layers;
    s.n_head = l.num_attention_heads;
    s.kv_heads = l.num_key_value_heads;
    s.head_dim = l.head_dim();
    s.grid = c.grid_size();
    s.condition_tokens = kTypicalPromptTokens;
    s.num_classes = 0;
    s.image_size = c.image_size;
    s.gpt_parameters = c.parameter_count();
    s.kv_bytes_per_token = kv_bytes_per_token_f32(c);
    std::ostringstream a;
    a << "LLaMA " << l.hidden_size << " x " << l.num_hidden_layers << " layers, " << l.num_attention_heads << " heads";
    if (l.num_key_value_heads != l.num_attention_heads) a << " (" << l.num_key_value_heads << " KV)";
    a << "; prompt + " << s.grid << "x" << s.grid << " tokens, " << s.image_size << " px; VQ " << c.vq.codebook_size
      << " codes";
    s.architecture = a.str();
  }

  BundleInfo inspect(const io::ModelBundle& bundle) const override {
    // bf16 halves what checking every tensor costs (Janus-Pro-7B: 14 GB instead of 28).
    const JanusModel model = JanusModel::load(bundle, c10::Device(c10::kCPU), at::kBFloat16);
    const JanusConfig& c = model.config;
    const LanguageConfig& l = c.language;
    const StoredWeights stored = stored_weights(bundle.weights_path(), {"language_model.", "gen_"});
    const int64_t kv = kv_bytes_per_token_f32(c);
    BundleInfo info;
    info.json = {{"janus", to_json(c)},
                 {"parameters", c.parameter_count()},
                 {"image_size", c.image_size},
                 {"tokens_per_image", c.image_tokens()},
                 {"tokenizer_vocab", model.tokenizer->vocab_size()},
                 {"kv_bytes_per_token_f32", kv},
                 {"kv_bytes_per_token_f16", kv / 2},
                 {"weights_dtypes", stored.dtypes}};
    info.lines = {
        {"language model",
         format_text("LLaMA hidden %lld, %lld layers, %lld heads (%lld kv heads, head_dim %lld), ffn %lld\n"
                     "vocab %lld, context %lld positions",
                     (long long)l.hidden_size, (long long)l.num_hidden_layers, (long long)l.num_attention_heads,
                     (long long)l.num_key_value_heads, (long long)l.head_dim(), (long long)l.intermediate_size,
                     (long long)l.vocab_size, (long long)l.max_position_embeddings)},
        {"image path", format_text("gen_embed %lldx%lld, aligner depth %lld, head %lld -> %lld",
                                   (long long)c.image_token_size, (long long)c.gen_embed_dim,
                                   (long long)c.aligner_depth, (long long)c.head_embed, (long long)c.image_token_size)},
        {"tokenizer", format_text("%lld tokens (tokenizer/tokenizer.json)", (long long)model.tokenizer->vocab_size())},
        {"image", format_text("%lldx%lld px, %lldx%lld tokens", (long long)c.image_size, (long long)c.image_size,
                              (long long)c.grid_size(), (long long)c.grid_size())},
        {"parameters", format_text("%.2fM (weights %s)", c.parameter_count() / 1e6, stored.dtypes.c_str())},
        {"KV cache", kv_cache_text(kv, c.image_tokens() + kTypicalPromptTokens) + " (with a " +
                         std::to_string(kTypicalPromptTokens) + "-token prompt)"},
    };
    return info;
  }

  std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const override {
    JanusConvertOptions o;
    o.checkpoint = options.require("--checkpoint");
    o.out_dir = options.require("--out");
    o.name = options.get("--name", "");
    o.weights_dtype = options.get("--dtype", "keep");
    o.image_size = options.get_int("--image-size", o.image_size);
    options.refuse_unused("--family janus-pro");
    const JanusConvertReport r = convert_janus_checkpoint(o, progress);
    return format_text(
        "wrote %s: %lld tensors, %.1f MiB from %zu weight file(s) (LLaMA %lld x %lld layers, %lldx%lld "
        "image tokens; dropped %lld tensors generation never uses%s)",
        o.out_dir.c_str(), (long long)r.tensors_written, r.bytes_written / 1048576.0, r.weight_files.size(),
        (long long)r.config.language.hidden_size, (long long)r.config.language.num_hidden_layers,
        (long long)r.config.grid_size(), (long long)r.config.grid_size(), (long long)r.tensors_dropped,
        r.encoder_kept ? "; kept the VQ encoder, so the bundle can finish pictures" : "");
  }

  RandomArchitecture random_architecture(const std::string& text) const override {
    const auto presets = description().random_presets;
    if (std::find(presets.begin(), presets.end(), text) == presets.end())
      throw InvalidArgumentError("--random: unknown architecture '" + text +
                                 "' (expected janus-pro-1b, janus-pro-7b or janus-pro-tiny)");
    const JanusConfig config = random_janus_config(text);
    const std::string name = text + "-random";
    RandomArchitecture arch;
    arch.manifest = janus_manifest(name, config, nlohmann::json::object());
    arch.write = [name, config](const std::string& dir, uint64_t seed, const std::string& dtype) {
      write_random_janus_bundle(dir, name, config, seed, dtype);
    };
    return arch;
  }

  void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck& check) const override {
    const JanusConfig c = config_of(bundle);
    make_policy(spec, prompt_policy_context(c, kTypicalPromptTokens, check.batch, check.cfg_scale > 1.0, check.seed));
  }

  ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                         const DeviceChoice& device) const override {
    return run_janus_conformance(manifest, dir, torch_device(device));
  }

  std::string write_random(const std::string& preset, const FamilyOptions& options) const override {
    const JanusConfig config = random_janus_config(preset);
    const std::string out = options.require("--out");
    const std::string name = options.get("--name", preset + "-random");
    const uint64_t seed = options.get_u64("--seed", 0);
    const std::string dtype = options.get("--dtype", preset == "janus-pro-tiny" ? "f32" : "bf16");
    const bool with_encoder = options.get("--vq-encoder", "no") == "yes";
    options.refuse_unused("preset " + preset);
    write_random_janus_bundle(out, name, config, seed, dtype);
    // A separate draw (seed + 1), so that a bundle's weights do not depend on it.
    if (with_encoder)
      vq::write_bundle_vq_encoder(out, config.vq, vq::random_vq_encoder(config.vq, seed + 1),
                                  io::parse_weights_dtype(dtype));
    return format_text("wrote %s (%s, %.1fM parameters, random weights, byte-level tokenizer)", out.c_str(),
                       name.c_str(), config.parameter_count() / 1e6);
  }
};

}  // namespace

const ModelFamily& janus_family() {
  static const JanusFamily family;
  return family;
}

}  // namespace kvs::janus
