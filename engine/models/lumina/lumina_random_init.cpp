#include "engine/models/lumina/lumina_random_init.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/random_bundle.h"
#include "engine/models/lumina/lumina_model.h"
#include "engine/models/lumina/lumina_tokenizer_files.h"
#include "engine/models/lumina/lumina_weights.h"

namespace kvs::lumina {
namespace {

// Scales that keep activations O(1) through the depth: embeddings N(0, 1),
// matrices N(0, 1/fan_in), norm weights 1, biases (qk-norm's, the VQGAN's) 0.
at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  if (n.ends_with(".bias")) return at::zeros(e.shape, f32);
  if (n.find("norm") != std::string::npos) return at::ones(e.shape, f32);
  if (n == "model.embed_tokens.weight" || n == "quantize.embedding.weight")
    return at::normal(0.0, 1.0, e.shape, gen, f32);
  const double gain = n == "decoder.conv_out.weight" ? 0.25 : 1.0;
  return at::normal(0.0, std::sqrt(gain / static_cast<double>(io::fan_in(e))), e.shape, gen, f32);
}

}  // namespace

LuminaConfig tiny_lumina_config() {
  LuminaConfig c;
  c.lm.vocab_size = 8832 + 256;
  c.lm.hidden_size = 128;
  c.lm.intermediate_size = 352;
  c.lm.num_hidden_layers = 2;
  c.lm.num_attention_heads = 4;
  c.lm.num_key_value_heads = 2;
  c.lm.max_position_embeddings = 4096;
  c.vqgan.embed_dim = 8;
  c.vqgan.z_channels = 32;
  c.vqgan.ch = 32;
  c.vqgan.ch_mult = {1, 1, 2};
  c.vqgan.num_res_blocks = 1;
  c.vqgan.resolution = 64;
  c.image_size = 256;
  c.validate();
  return c;
}

LuminaConfig small_lumina_config() {
  LuminaConfig c;  // Chameleon's vocabulary, VQGAN and 768 px; a narrower, shallower language model
  c.lm.hidden_size = 1024;
  c.lm.intermediate_size = 2816;
  c.lm.num_hidden_layers = 8;
  c.lm.num_attention_heads = 16;
  c.lm.num_key_value_heads = 16;
  c.validate();
  return c;
}

LuminaConfig random_lumina_config(const std::string& preset) {
  if (preset == "lumina-mgpt-tiny") return tiny_lumina_config();
  if (preset == "lumina-mgpt-small") return small_lumina_config();
  return lumina_preset(preset);
}

void write_random_lumina_bundle(const std::string& dir, const std::string& name, const LuminaConfig& config,
                                uint64_t seed, const std::string& weights_dtype) {
  config.validate();
  io::write_random_bundle(dir, lumina_manifest(name, config, io::random_init_provenance(seed)),
                          {{"", chameleon_expected_tensors(config.lm), init_tensor},
                           {"vqgan.", vqgan_decoder_expected_tensors(config.vqgan), init_tensor}},
                          seed, weights_dtype);
  const int64_t vocab = write_chameleon_byte_tokenizer((std::filesystem::path(dir) / "tokenizer").string());
  if (vocab > config.lm.vocab_size)
    throw InvalidArgumentError("vocab_size " + std::to_string(config.lm.vocab_size) +
                               " is smaller than the byte-level tokenizer's " + std::to_string(vocab) + " tokens");
}

}  // namespace kvs::lumina
