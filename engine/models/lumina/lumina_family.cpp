#include "engine/models/lumina/lumina_family.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/core/torch_device.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/process_memory.h"
#include "engine/models/lumina/lumina_conformance.h"
#include "engine/models/lumina/lumina_converter.h"
#include "engine/models/lumina/lumina_generation.h"
#include "engine/models/lumina/lumina_model.h"
#include "engine/models/lumina/lumina_prompt.h"
#include "engine/models/lumina/lumina_random_init.h"
#include "engine/session/bundle_info.h"
#include "engine/session/loaded_model.h"
#include "engine/session/model_summary.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::lumina {
namespace {

int64_t kv_bytes_per_token_f32(const LuminaConfig& c) {
  return 2 * c.lm.num_hidden_layers * c.lm.num_key_value_heads * c.lm.head_dim() * 4;
}

// A typical templated prompt's length (the resolution phrase alone is about 15
// tokens), for geometry checks before a prompt is known.
constexpr int64_t kTypicalPromptTokens = 40;

LuminaConfig config_of(const io::ModelBundle& bundle) {
  return lumina_config_from_json(bundle.manifest.at("architecture").at("chameleon"), bundle.manifest.at("tokenizer"));
}

void refuse_if_too_big(const io::ModelBundle& bundle, RunDtype dtype) {
  const LuminaConfig c = config_of(bundle);
  const int64_t need = c.lm.parameter_count() * run_dtype_bytes(dtype);
  const int64_t available = system_available_bytes();
  if (available <= 0 || need <= available) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::string hint = dtype == RunDtype::F32 ? " (--dtype bf16 halves it)" : "";
  throw InvalidArgumentError(
      format_text("model %s needs about %.1f GiB for its weights in %s, but only %.1f GiB of "
                  "memory is available%s",
                  bundle.name().c_str(), need / gib, run_dtype_name(dtype).c_str(), available / gib, hint.c_str()));
}

std::string sizes_text(int64_t base) {
  std::string out;
  for (const LuminaImageSize& s : lumina_resolutions(base))
    out += (out.empty() ? "" : ", ") + std::to_string(s.width) + "x" + std::to_string(s.height);
  return out;
}

class LuminaFamily : public ModelFamily {
 public:
  const FamilyDescription& description() const override { return lumina_description(); }

  std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const override {
    if (device.kind == DeviceKind::Cpu) refuse_if_too_big(bundle, device.dtype);
    return std::make_unique<LoadedModelOf<LuminaModel>>(LuminaModel::load(bundle, torch_device(device),
                                                                          torch_dtype(device)),
                                                        run_prompt_generation);
  }

  void summarize(const io::ModelBundle& bundle, ModelSummary& s) const override {
    const LuminaConfig c = config_of(bundle);
    const ChameleonConfig& l = c.lm;
    const LuminaImageSize size{c.image_size, c.image_size};
    s.n_layer = l.num_hidden_layers;
    s.n_head = l.num_attention_heads;
    s.kv_heads = l.num_key_value_heads;
    s.head_dim = l.head_dim();
    s.grid = size.token_height();
    // grid^2 + condition_tokens is what a whole sequence caches: the prompt, the
    // header and one end-of-line token per row.
    s.condition_tokens = kTypicalPromptTokens + 3 + size.token_height();
    s.num_classes = 0;
    s.image_size = size.token_width() * c.vqgan.upsampling();
    s.gpt_parameters = l.parameter_count();
    s.kv_bytes_per_token = kv_bytes_per_token_f32(c);
    s.image_sizes.push_back(std::to_string(c.image_size) + "x" + std::to_string(c.image_size));
    for (const LuminaImageSize& other : lumina_resolutions(c.image_size))
      if (other.width != c.image_size || other.height != c.image_size)
        s.image_sizes.push_back(std::to_string(other.width) + "x" + std::to_string(other.height));
    std::ostringstream a;
    a << "Chameleon " << l.hidden_size << " x " << l.num_hidden_layers << " layers, " << l.num_attention_heads
      << " heads";
    if (l.num_key_value_heads != l.num_attention_heads) a << " (" << l.num_key_value_heads << " KV)";
    a << "; prompt + " << size.token_height() << " rows of " << size.token_width() << "+1 tokens at " << c.image_size
      << " px; VQGAN x" << c.vqgan.upsampling();
    s.architecture = a.str();
  }

  BundleInfo inspect(const io::ModelBundle& bundle) const override {
    const LuminaModel model = LuminaModel::load(bundle, c10::Device(c10::kCPU), at::kBFloat16);
    const LuminaConfig& c = model.config;
    const ChameleonConfig& l = c.lm;
    const LuminaImageSize size{c.image_size, c.image_size};
    const StoredWeights stored = stored_weights(bundle.weights_path(), {"model.", "lm_head.", "vqgan."});
    const int64_t kv = kv_bytes_per_token_f32(c);
    const int64_t tokens = kTypicalPromptTokens + lumina_generated_positions(size);
    BundleInfo info;
    info.json = {{"chameleon", to_json(l, c.image_size)},
                 {"vqgan", to_json(c.vqgan)},
                 {"parameters", l.parameter_count()},
                 {"image_size", c.image_size},
                 {"image_sizes", sizes_text(c.image_size)},
                 {"tokens_per_image", size.body_tokens()},
                 {"tokenizer_vocab", model.tokenizer->vocab_size()},
                 {"kv_bytes_per_token_f32", kv},
                 {"kv_bytes_per_token_f16", kv / 2},
                 {"weights_dtypes", stored.dtypes}};
    info.lines = {
        {"language model",
         format_text("Chameleon hidden %lld, %lld layers, %lld heads (%lld kv heads, head_dim %lld), ffn %lld%s\n"
                     "vocab %lld, context %lld positions",
                     (long long)l.hidden_size, (long long)l.num_hidden_layers, (long long)l.num_attention_heads,
                     (long long)l.num_key_value_heads, (long long)l.head_dim(), (long long)l.intermediate_size,
                     l.swin_norm ? ", swin norm" : "", (long long)l.vocab_size, (long long)l.max_position_embeddings)},
        {"VQGAN", format_text("%lld codes of %lld, ch %lld, %zu levels (x%lld)", (long long)c.vqgan.n_embed,
                              (long long)c.vqgan.embed_dim, (long long)c.vqgan.ch, c.vqgan.ch_mult.size(),
                              (long long)c.vqgan.upsampling())},
        {"tokenizer", format_text("%lld tokens (tokenizer/tokenizer.json)", (long long)model.tokenizer->vocab_size())},
        {"image", format_text("%lldx%lld px in the prompt: %lld rows of %lld tokens + end of line; sizes %s",
                              (long long)c.image_size, (long long)c.image_size, (long long)size.token_height(),
                              (long long)size.token_width(), sizes_text(c.image_size).c_str())},
        {"parameters", format_text("%.2fM (weights %s)", l.parameter_count() / 1e6, stored.dtypes.c_str())},
        {"KV cache", kv_cache_text(kv, tokens) + " (with a " + std::to_string(kTypicalPromptTokens) + "-token prompt)"},
    };
    return info;
  }

  std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const override {
    LuminaConvertOptions o;
    o.checkpoint = options.require("--checkpoint");
    o.vqgan = options.require("--vqgan");
    o.out_dir = options.require("--out");
    o.name = options.get("--name", "");
    o.weights_dtype = options.get("--dtype", "keep");
    o.image_size = options.get_int("--image-size", 0);
    options.refuse_unused("--family lumina-mgpt");
    const LuminaConvertReport r = convert_lumina_checkpoint(o, progress);
    return format_text(
        "wrote %s: %lld tensors, %.1f MiB from %zu weight file(s) and vqgan.ckpt (Chameleon %lld x %lld layers, "
        "%lld px; dropped %lld tensors generation never uses)",
        o.out_dir.c_str(), (long long)r.tensors_written, r.bytes_written / 1048576.0, r.weight_files.size(),
        (long long)r.config.lm.hidden_size, (long long)r.config.lm.num_hidden_layers, (long long)r.config.image_size,
        (long long)r.tensors_dropped);
  }

  RandomArchitecture random_architecture(const std::string& text) const override {
    const auto presets = description().random_presets;
    if (std::find(presets.begin(), presets.end(), text) == presets.end())
      throw InvalidArgumentError("--random: unknown architecture '" + text +
                                 "' (expected lumina-mgpt-7b, lumina-mgpt-34b, lumina-mgpt-small or lumina-mgpt-tiny)");
    const LuminaConfig config = random_lumina_config(text);
    const std::string name = text + "-random";
    RandomArchitecture arch;
    arch.manifest = lumina_manifest(name, config, nlohmann::json::object());
    arch.write = [name, config](const std::string& dir, uint64_t seed, const std::string& dtype) {
      write_random_lumina_bundle(dir, name, config, seed, dtype);
    };
    return arch;
  }

  void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck& check) const override {
    const LuminaConfig c = config_of(bundle);
    make_policy(spec, lumina_policy_context(c, {c.image_size, c.image_size}, kTypicalPromptTokens + 3, check.batch,
                                            check.cfg_scale > 1.0, check.seed));
  }

  ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                         const DeviceChoice& device) const override {
    return run_lumina_conformance(manifest, dir, torch_device(device));
  }

  std::string write_random(const std::string& preset, const FamilyOptions& options) const override {
    const LuminaConfig config = random_lumina_config(preset);
    const std::string out = options.require("--out");
    const std::string name = options.get("--name", preset + "-random");
    const uint64_t seed = options.get_u64("--seed", 0);
    const std::string dtype =
        options.get("--dtype", preset == "lumina-mgpt-tiny" || preset == "lumina-mgpt-small" ? "f32" : "bf16");
    options.refuse_unused("preset " + preset);
    write_random_lumina_bundle(out, name, config, seed, dtype);
    return format_text("wrote %s (%s, %.1fM parameters, random weights, byte-level Chameleon tokenizer)", out.c_str(),
                       name.c_str(), config.lm.parameter_count() / 1e6);
  }
};

}  // namespace

const ModelFamily& lumina_family() {
  static const LuminaFamily family;
  return family;
}

}  // namespace kvs::lumina
