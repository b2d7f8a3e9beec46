#include "engine/models/llamagen/llamagen_random_init.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/random_bundle.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_weights.h"

namespace kvs::llamagen {
namespace {

at::Tensor init_tensor(const io::ExpectedTensor& e, at::Generator& gen) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  const std::string& n = e.name;
  if (n.ends_with(".bias")) return at::zeros(e.shape, f32);
  const bool is_norm = n.find("norm") != std::string::npos && e.shape.size() == 1;
  if (is_norm) return at::ones(e.shape, f32);
  if (n.find("embedding") != std::string::npos || n.find("tok_embeddings") != std::string::npos)
    return at::normal(0.0, 1.0, e.shape, gen, f32);
  return at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(io::fan_in(e))), e.shape, gen, f32);
}

}  // namespace

void write_random_llamagen_bundle(const std::string& dir, const std::string& name, const GptConfig& gpt,
                                  const VqConfig& vq, uint64_t seed, const std::string& weights_dtype) {
  gpt.validate();
  vq.validate();
  if (gpt.vocab_size != vq.codebook_size)
    throw InvalidArgumentError("vocab_size must equal the tokenizer codebook_size");
  io::write_random_bundle(dir, llamagen_manifest(name, gpt, vq, io::random_init_provenance(seed)),
                          {{"gpt.", gpt_expected_tensors(gpt), init_tensor},
                           {"vq.", vq_decoder_expected_tensors(vq), init_tensor}},
                          seed, weights_dtype);
}

GptConfig demo_gpt_config() {
  GptConfig c;
  c.dim = 256;
  c.n_layer = 6;
  c.n_head = 8;
  c.vocab_size = 1024;
  c.num_classes = 10;
  c.block_size = 256;
  return c;
}

VqConfig demo_vq_config() {
  VqConfig c;
  c.codebook_size = 1024;
  c.codebook_embed_dim = 8;
  c.z_channels = 64;
  c.ch = 32;
  c.decoder_ch_mult = {1, 1, 2};
  return c;
}

}  // namespace kvs::llamagen
