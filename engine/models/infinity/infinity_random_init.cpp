#include "engine/models/infinity/infinity_random_init.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/random_bundle.h"
#include "engine/models/infinity/infinity_weights.h"
#include "engine/text/sentencepiece_trainer.h"

namespace kvs::infinity {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Scales that keep activations O(1) through the depth, after the official
// initialisations where they matter: biases 0, norm weights 1, the cosine
// attention's scale log(4), ada_gss N(0, 1/C), the start and level embeddings
// N(0, 1/(3C)), T5's embeddings N(0, 1), matrices N(0, 1/fan_in).
at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  const int64_t last = e.shape.back();
  if (ends_with(n, ".bias") || ends_with(n, "zero_k_bias") || ends_with(n, "q_bias") || ends_with(n, "v_bias"))
    return at::zeros(e.shape, f32);
  if (ends_with(n, "scale_mul_1H11")) return at::full(e.shape, std::log(4.0), f32);
  if (n.find("norm") != std::string::npos) return at::ones(e.shape, f32);
  if (ends_with(n, "ada_gss")) return at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(last)), e.shape, gen, f32);
  if (n == "pos_start" || n == "lvl_embed.weight" || ends_with(n, "mat_q"))
    return at::normal(0.0, std::sqrt(1.0 / (3.0 * static_cast<double>(last))), e.shape, gen, f32);
  if (n == "cfg_uncond") return at::normal(0.0, 1.2 / std::sqrt(static_cast<double>(last)), e.shape, gen, f32);
  if (n == "shared.weight") return at::normal(0.0, 1.0, e.shape, gen, f32);
  if (ends_with(n, "relative_attention_bias.weight")) return at::normal(0.0, 0.1, e.shape, gen, f32);
  const double gain = ends_with(n, "conv_out.conv.weight") || ends_with(n, "conv_out.weight") ? 0.25 : 1.0;
  return at::normal(0.0, std::sqrt(gain / static_cast<double>(io::fan_in(e))), e.shape, gen, f32);
}

// The conformance cases' tiny sizes (docs/conformance.md).
InfinityModelConfig tiny_config() {
  InfinityModelConfig c;
  c.transformer.depth = 4;
  c.transformer.embed_dim = 64;
  c.transformer.num_heads = 2;
  c.transformer.block_chunks = 2;
  c.transformer.text_channels = 256;
  c.transformer.codebook_dim = 16;
  c.t5.vocab_size = 220;
  c.t5.d_model = 256;
  c.t5.d_kv = 32;
  c.t5.num_heads = 4;
  c.t5.d_ff = 256;
  c.t5.num_layers = 2;
  c.vae = BsqVaeConfig{};
  c.vae.codebook_dim = 16;
  c.vae.patch_size = 4;
  c.vae.ch_mult = {1, 1, 2};
  c.vae.base_ch = 32;
  c.pixel_budget = "0.06M";
  return c;
}

// A reduced Infinity a CPU runs: head width 128 (HeatKV's fused kernel needs
// it), a small T5 with flan-t5's vocabulary size, 2B's VAE, 512 px.
InfinityModelConfig small_config() {
  InfinityModelConfig c;
  c.transformer.depth = 8;
  c.transformer.embed_dim = 512;
  c.transformer.num_heads = 4;
  c.transformer.block_chunks = 4;
  c.transformer.text_channels = 512;
  c.t5.d_model = 512;
  c.t5.d_kv = 64;
  c.t5.num_heads = 8;
  c.t5.d_ff = 1024;
  c.t5.num_layers = 4;
  c.pixel_budget = "0.25M";
  return c;
}

}  // namespace

const std::vector<std::string>& infinity_random_presets() {
  static const std::vector<std::string> presets = {"infinity-tiny", "infinity-small", "infinity-2b", "infinity-8b"};
  return presets;
}

InfinityModelConfig random_infinity_config(const std::string& preset) {
  InfinityModelConfig c;
  if (preset == "infinity-2b") {
    c.transformer = infinity_2b_config();
    c.t5 = flan_t5_xl_config();
    c.vae = infinity_2b_vae_config();
  } else if (preset == "infinity-8b") {
    c.transformer = infinity_8b_config();
    c.t5 = flan_t5_xl_config();
    c.vae = infinity_8b_vae_config();
  } else if (preset == "infinity-small") {
    c = small_config();
    c.vae = infinity_2b_vae_config();
  } else if (preset == "infinity-tiny") {
    c = tiny_config();
  } else {
    throw InvalidArgumentError("unknown Infinity preset '" + preset +
                               "' (expected infinity-2b, infinity-8b, infinity-small or infinity-tiny)");
  }
  c.validate();
  return c;
}

void write_random_infinity_bundle(const std::string& dir, const std::string& name, const InfinityModelConfig& config,
                                  uint64_t seed, const std::string& weights_dtype) {
  config.validate();
  io::write_random_bundle(dir, infinity_manifest(name, config, io::random_init_provenance(seed)),
                          {{"infinity.", transformer_expected_tensors(config.transformer), init_tensor},
                           {"t5.", t5_expected_tensors(config.t5), init_tensor},
                           {"vae.", vae_decoder_expected_tensors(config.vae), init_tensor}},
                          seed, weights_dtype);
  // The tokenizer: at most the T5 vocabulary less T5's 100 extra ids.
  const int pieces = static_cast<int>(std::min<int64_t>(config.t5.vocab_size - 100, 1000));
  const std::string model = text::train_t5_sentencepiece(text::caption_corpus(), pieces);
  const std::filesystem::path folder = std::filesystem::path(dir) / "tokenizer";
  std::filesystem::create_directories(folder);
  std::ofstream out(folder / "spiece.model", std::ios::binary);
  out.write(model.data(), static_cast<std::streamsize>(model.size()));
  if (!out) throw FileError("file " + (folder / "spiece.model").string() + ": cannot be written");
}

}  // namespace kvs::infinity
