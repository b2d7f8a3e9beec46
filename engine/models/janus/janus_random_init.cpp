#include "engine/models/janus/janus_random_init.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/random_bundle.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_tokenizer_files.h"
#include "engine/models/janus/janus_weights.h"

namespace kvs::janus {
namespace {

// Scales that keep activations O(1) through the depth (as the conformance
// weights are drawn): embeddings N(0, 1), matrices N(0, 1/fan_in), norms 1,
// biases 0. Drawn in float32 and stored in the bundle's dtype.
at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  if (n.ends_with(".bias")) return at::zeros(e.shape, f32);
  if (e.shape.size() == 1) return at::ones(e.shape, f32);
  if (n.find("embed") != std::string::npos || n.find("quantize.embedding") != std::string::npos)
    return at::normal(0.0, 1.0, e.shape, gen, f32);
  return at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(io::fan_in(e))), e.shape, gen, f32);
}

}  // namespace

JanusConfig tiny_janus_config() {
  JanusConfig c;
  c.language.hidden_size = 128;
  c.language.intermediate_size = 352;
  c.language.num_hidden_layers = 2;
  c.language.num_attention_heads = 4;
  c.language.num_key_value_heads = 2;
  c.language.vocab_size = 512;
  c.language.max_position_embeddings = 1024;
  c.image_token_size = 512;
  c.gen_embed_dim = 8;
  c.head_embed = 128;
  c.vq.codebook_size = 512;
  c.vq.codebook_embed_dim = 8;
  c.vq.z_channels = 64;
  c.vq.ch = 32;
  c.vq.decoder_ch_mult = {1, 1, 2};
  c.image_size = 64;
  c.validate();
  return c;
}

JanusConfig random_janus_config(const std::string& preset) {
  if (preset == "janus-pro-tiny") return tiny_janus_config();
  return janus_preset(preset);
}

void write_random_janus_bundle(const std::string& dir, const std::string& name, const JanusConfig& config,
                               uint64_t seed, const std::string& weights_dtype) {
  config.validate();
  io::write_random_bundle(dir, janus_manifest(name, config, io::random_init_provenance(seed)),
                          {{"", janus_expected_tensors(config), init_tensor}}, seed, weights_dtype);
  const int64_t vocab = write_byte_level_tokenizer((std::filesystem::path(dir) / "tokenizer").string());
  if (vocab > config.language.vocab_size)
    throw InvalidArgumentError("vocab_size " + std::to_string(config.language.vocab_size) +
                               " is smaller than the byte-level tokenizer's " + std::to_string(vocab) + " tokens");
}

}  // namespace kvs::janus
