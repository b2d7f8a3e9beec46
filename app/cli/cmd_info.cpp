#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/llamagen/llamagen_config.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/var/var_model.h"

namespace kvs::cli {
namespace {

// Where the weights came from (one line per trained part for kvstudio-train
// bundles) and, when measured, the quality gates (kvstudio-train evaluate).
void print_provenance_and_quality(const io::ModelBundle& bundle) {
  const nlohmann::json& m = bundle.manifest;
  if (m.contains("provenance") && m["provenance"].is_object()) {
    const nlohmann::json& p = m["provenance"];
    bool first = true;
    auto line = [&](const std::string& text) {
      std::printf("%s%s\n", first ? "provenance:   " : "              ", text.c_str());
      first = false;
    };
    for (const char* key : {"source", "note"})
      if (p.contains(key) && p[key].is_string()) line(p[key].get<std::string>());
    if (p.contains("created_by") && p["created_by"].is_string()) line("written by " + p["created_by"].get<std::string>());
    for (const auto& [key, value] : p.items()) {
      const auto pos = key.rfind("_training");
      if (pos == std::string::npos || pos + 9 != key.size() || !value.is_object()) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: %lld steps, batch %lld, %.0f s of training", key.substr(0, pos).c_str(),
                    static_cast<long long>(value.value("steps", int64_t{0})),
                    static_cast<long long>(value.value("batch", int64_t{0})), value.value("train_seconds", 0.0));
      line(buf);
    }
  }
  if (m.contains("quality") && m["quality"].is_object()) {
    const nlohmann::json& q = m["quality"];
    auto number = [&](const char* key) { return q.contains(key) && q[key].is_number() ? q[key].get<double>() : NAN; };
    std::printf("quality:      tokenizer PSNR %.2f dB, classifier accuracy %.1f %%, generated class accuracy %.1f %%,\n"
                "              demo-FID %.2f (%lld generated images)\n",
                number("tokenizer_psnr_db"), 100 * number("classifier_accuracy"), 100 * number("generated_class_accuracy"),
                number("demo_fid"), static_cast<long long>(q.value("generated_images", int64_t{0})));
  }
}

// Stored parameters per part — a tensor counts for the first prefix its name
// starts with, the last part takes the rest — and the stored dtypes ("F16,F32").
struct StoredWeights {
  std::vector<int64_t> params;
  std::string dtypes;
};
StoredWeights stored_weights(const io::ModelBundle& bundle, const std::vector<std::string>& prefixes) {
  StoredWeights out;
  out.params.assign(prefixes.size() + 1, 0);
  auto reader = io::SafetensorsReader::open(bundle.weights_path());
  for (const auto& e : reader->index().tensors) {
    size_t part = 0;
    while (part < prefixes.size() && e.name.rfind(prefixes[part], 0) != 0) ++part;
    out.params[part] += static_cast<int64_t>(e.numel());
    const std::string dtype = io::dtype_name(e.dtype);
    if (out.dtypes.find(dtype) == std::string::npos) out.dtypes += (out.dtypes.empty() ? "" : ",") + dtype;
  }
  return out;
}

void print_kv_cache_per_token(int64_t kv_per_token_f32, int64_t tokens) {
  std::printf("KV cache:     %lld bytes/token in float32 (%lld in fp16/bf16); full image: %.2f MiB per sequence,\n"
              "              x2 with CFG (conditional + unconditional rows)\n",
              (long long)kv_per_token_f32, (long long)kv_per_token_f32 / 2, kv_per_token_f32 * tokens / 1048576.0);
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

int info_var(const io::ModelBundle& bundle, bool as_json) {
  // Loading on the CPU validates every tensor name, shape and dtype.
  const auto model = var::VarModel::load(bundle, at::Device(at::kCPU));
  const auto& c = model.transformer->config();
  const auto& v = model.vqvae->config();
  const StoredWeights stored = stored_weights(bundle, {"var."});
  const int64_t var_params = stored.params[0], vae_params = stored.params[1];
  const std::string& dtypes = stored.dtypes;
  const int64_t kv_per_token_f32 = 2 * c.depth * c.num_heads * c.head_dim() * 4;
  const int64_t tokens = c.total_tokens();
  if (as_json) {
    nlohmann::json j = {{"name", model.name},
                        {"family", "var"},
                        {"var", var::to_json(c)},
                        {"tokenizer", var::to_json(v)},
                        {"var_parameters", var_params},
                        {"vqvae_decoder_parameters", vae_params},
                        {"image_size", v.image_size()},
                        {"scales", c.scales()},
                        {"tokens_per_image", tokens},
                        {"phi_schedule", v.phi_schedule()},
                        {"kv_bytes_per_token_f32", kv_per_token_f32},
                        {"kv_bytes_per_token_f16", kv_per_token_f32 / 2},
                        {"weights_dtypes", dtypes},
                        {"provenance", bundle.manifest.value("provenance", nlohmann::json::object())}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model:        %s (%s)\n", model.name.c_str(), bundle.dir.c_str());
  std::printf("family:       var (class-conditional, next-scale prediction)\n");
  std::printf("transformer:  depth %lld, width %lld, %lld heads (head_dim %lld), mlp %lld%s%s\n", (long long)c.depth,
              (long long)c.embed_dim, (long long)c.num_heads, (long long)c.head_dim(), (long long)c.mlp_hidden(),
              c.shared_aln ? ", shared AdaLN" : "", c.attn_l2_norm ? ", L2-normalised attention" : "");
  std::printf("              vocab %lld, %lld classes, %lld scales (%s) = %lld tokens\n", (long long)c.vocab_size,
              (long long)c.num_classes, (long long)c.scales(), join_ints(c.patch_nums).c_str(), (long long)tokens);
  std::printf("tokenizer:    multi-scale VQVAE codebook %lldx%lld, ch %lld, %zu levels (%lldx), phi %lld (schedule %s)\n",
              (long long)v.vocab_size, (long long)v.z_channels, (long long)v.ch, v.ch_mult.size(),
              (long long)v.downsample(), (long long)v.phi_count(), join_ints(v.phi_schedule()).c_str());
  std::printf("image:        %lldx%lld px\n", (long long)v.image_size(), (long long)v.image_size());
  std::printf("parameters:   VAR %.2fM, VQVAE decoder %.2fM (weights %s)\n", var_params / 1e6, vae_params / 1e6,
              dtypes.c_str());
  print_kv_cache_per_token(kv_per_token_f32, tokens);
  print_provenance_and_quality(bundle);
  return 0;
}

int info_mar(const io::ModelBundle& bundle, bool as_json) {
  // Loading on the CPU validates every tensor name, shape and dtype.
  const auto model = mar::MarModel::load(bundle, at::Device(at::kCPU));
  const auto& c = model.config();
  const auto& v = model.vae->config();
  const StoredWeights stored = stored_weights(bundle, {"mar.diffloss.", "mar."});
  const int64_t head_params = stored.params[0], mar_params = stored.params[1], vae_params = stored.params[2];
  const std::string& dtypes = stored.dtypes;
  const nlohmann::json defaults = bundle.manifest.value("sampling_defaults", nlohmann::json::object());
  if (as_json) {
    nlohmann::json j = {{"name", model.name},
                        {"family", "mar"},
                        {"mar", mar::to_json(c)},
                        {"tokenizer", mar::to_json(v)},
                        {"transformer_parameters", mar_params},
                        {"diffusion_head_parameters", head_params},
                        {"vae_decoder_parameters", vae_params},
                        {"image_size", model.image_size()},
                        {"tokens_per_image", c.seq_len()},
                        {"diffusion_steps", model.diffusion->num_timesteps()},
                        {"sampling_defaults", defaults},
                        {"weights_dtypes", dtypes},
                        {"provenance", bundle.manifest.value("provenance", nlohmann::json::object())}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model:        %s (%s)\n", model.name.c_str(), bundle.dir.c_str());
  std::printf("family:       mar (class-conditional, masked autoregressive with a diffusion head)\n");
  std::printf("encoder:      %lld blocks, width %lld, %lld heads, mlp %lld; %lld buffer positions\n",
              (long long)c.encoder_depth, (long long)c.encoder_embed_dim, (long long)c.encoder_num_heads,
              (long long)c.encoder_mlp_hidden(), (long long)c.buffer_size);
  std::printf("decoder:      %lld blocks, width %lld, %lld heads, mlp %lld\n", (long long)c.decoder_depth,
              (long long)c.decoder_embed_dim, (long long)c.decoder_num_heads, (long long)c.decoder_mlp_hidden());
  std::printf("tokens:       %lldx%lld continuous tokens of %lld channels, %lld classes\n", (long long)c.seq_h(),
              (long long)c.seq_w(), (long long)c.token_embed_dim(), (long long)c.class_num);
  std::printf("diff. head:   %lld res blocks, width %lld; %lld sampling steps (respacing '%s' of 1000, cosine)\n",
              (long long)c.diffloss_d, (long long)c.diffloss_w, (long long)model.diffusion->num_timesteps(),
              c.num_sampling_steps.c_str());
  std::printf("tokenizer:    KL VAE decoder, latent %lld, ch %lld, %zu levels (%lldx), latent scale %g\n",
              (long long)v.embed_dim, (long long)v.ch, v.ch_mult.size(), (long long)v.upsampling(), v.latent_scale);
  std::printf("image:        %lldx%lld px\n", (long long)model.image_size(), (long long)model.image_size());
  std::printf("parameters:   MAR %.2fM, diffusion head %.2fM, VAE decoder %.2fM (weights %s)\n", mar_params / 1e6,
              head_params / 1e6, vae_params / 1e6, dtypes.c_str());
  if (!defaults.empty()) std::printf("sampling:     %s\n", defaults.dump().c_str());
  std::printf("KV cache:     none (bidirectional attention recomputed at every step)\n");
  print_provenance_and_quality(bundle);
  return 0;
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  ArgParser p(args, {}, {"--help", "--json"}, 1);
  if (p.flag("--help")) {
    std::puts("usage: kvstudio-cli info [<model bundle>] [--json]\n"
              "  prints architecture, parameter count and KV-cache bytes per token; checks the weights");
    return 0;
  }
  const std::string path = p.positional().empty() ? default_model_path() : p.positional()[0];
  const io::ModelBundle bundle = io::ModelBundle::open(path);
  if (bundle.family() == "var") return info_var(bundle, p.flag("--json"));
  if (bundle.family() == "mar") return info_mar(bundle, p.flag("--json"));
  if (bundle.family() != "llamagen")
    throw InvalidArgumentError("model family '" + bundle.family() + "' is not supported yet (supported: llamagen, var, mar)");
  // Loading on the CPU validates every tensor name, shape and dtype.
  const auto model = llamagen::LlamaGenModel::load(bundle, at::Device(at::kCPU));
  const auto& g = model.gpt->config();
  const auto& v = model.vq->config();
  const StoredWeights stored = stored_weights(bundle, {"gpt."});
  const int64_t stored_params = stored.params[0], vq_params = stored.params[1];
  const std::string& dtypes = stored.dtypes;
  const int64_t kv_per_token_f32 = 2 * g.n_layer * g.kv_heads() * g.head_dim() * 4;
  const int64_t image_px = g.grid_size() * v.downsample();
  if (p.flag("--json")) {
    nlohmann::json j = {{"name", model.name},
                        {"family", "llamagen"},
                        {"gpt", llamagen::to_json(g)},
                        {"tokenizer", llamagen::to_json(v)},
                        {"gpt_parameters", stored_params},
                        {"tokenizer_decoder_parameters", vq_params},
                        {"image_size", image_px},
                        {"tokens_per_image", g.block_size},
                        {"kv_bytes_per_token_f32", kv_per_token_f32},
                        {"kv_bytes_per_token_f16", kv_per_token_f32 / 2},
                        {"weights_dtypes", dtypes},
                        {"provenance", bundle.manifest.value("provenance", nlohmann::json::object())}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model:        %s (%s)\n", model.name.c_str(), bundle.dir.c_str());
  std::printf("family:       llamagen (class-conditional, raster next-token)\n");
  std::printf("gpt:          dim %lld, %lld layers, %lld heads (%lld kv heads, head_dim %lld), ffn %lld\n",
              (long long)g.dim, (long long)g.n_layer, (long long)g.n_head, (long long)g.kv_heads(),
              (long long)g.head_dim(), (long long)g.ffn_hidden_dim());
  std::printf("              vocab %lld, %lld classes, %lldx%lld tokens\n", (long long)g.vocab_size,
              (long long)g.num_classes, (long long)g.grid_size(), (long long)g.grid_size());
  std::printf("tokenizer:    VQ codebook %lldx%lld (l2-norm %s), z %lld, ch %lld, %zu levels (%lldx)\n",
              (long long)v.codebook_size, (long long)v.codebook_embed_dim, v.codebook_l2_norm ? "on" : "off",
              (long long)v.z_channels, (long long)v.ch, v.decoder_ch_mult.size(), (long long)v.downsample());
  std::printf("image:        %lldx%lld px\n", (long long)image_px, (long long)image_px);
  std::printf("parameters:   GPT %.2fM, decoder %.2fM (weights %s)\n", stored_params / 1e6, vq_params / 1e6, dtypes.c_str());
  print_kv_cache_per_token(kv_per_token_f32, g.block_size + g.cls_token_num);
  print_provenance_and_quality(bundle);
  return 0;
}

}  // namespace kvs::cli
