#include "engine/models/infinity/infinity_weights.h"

#include "engine/models/infinity/infinity_transformer.h"
#include "engine/models/infinity/t5_encoder.h"

namespace kvs::infinity {
namespace {

template <typename Pairs>
std::vector<io::ExpectedTensor> expected(const Pairs& pairs, const std::string& prefix = "") {
  std::vector<io::ExpectedTensor> out;
  for (const auto& [name, shape] : pairs) out.push_back({prefix + name, shape});
  return out;
}

}  // namespace

std::vector<io::ExpectedTensor> transformer_expected_tensors(const InfinityConfig& config) {
  return expected(InfinityTransformer::weight_shapes(config));
}

std::vector<io::ExpectedTensor> t5_expected_tensors(const T5Config& config) {
  return expected(T5Encoder::weight_names(config));
}

std::vector<io::ExpectedTensor> vae_decoder_expected_tensors(const BsqVaeConfig& config) {
  return expected(BsqDecoder::weight_names(config));
}

std::vector<io::ExpectedTensor> infinity_expected_tensors(const InfinityConfig& transformer, const T5Config& t5,
                                                          const BsqVaeConfig& vae) {
  std::vector<io::ExpectedTensor> out = expected(InfinityTransformer::weight_shapes(transformer), "infinity.");
  for (auto e : expected(T5Encoder::weight_names(t5), "t5.")) out.push_back(e);
  for (auto e : expected(BsqDecoder::weight_names(vae), "vae.")) out.push_back(e);
  return out;
}

}  // namespace kvs::infinity
