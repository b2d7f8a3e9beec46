#pragma once
// Infinity's bundle tensors, derived from the configs: what the bundle loader,
// the converter and the random writer check, the same strict way. The official
// loader takes its checkpoint with strict=False, so a checkpoint chunked
// differently would run random blocks; here a missing or unexpected tensor is
// refused by name. Three parts under their prefixes: "infinity." (the official
// Infinity state-dict names, block_chunks form), "t5." (the Hugging Face
// T5EncoderModel names) and "vae." (the BSQ-VAE decoder's official names).
#include <vector>

#include "engine/io/tensor_spec.h"
#include "engine/models/infinity/bsq_decoder.h"
#include "engine/models/infinity/infinity_config.h"
#include "engine/models/infinity/t5_config.h"

namespace kvs::infinity {

std::vector<io::ExpectedTensor> transformer_expected_tensors(const InfinityConfig& config);
std::vector<io::ExpectedTensor> t5_expected_tensors(const T5Config& config);
std::vector<io::ExpectedTensor> vae_decoder_expected_tensors(const BsqVaeConfig& config);
// All three under their prefixes.
std::vector<io::ExpectedTensor> infinity_expected_tensors(const InfinityConfig& transformer, const T5Config& t5,
                                                          const BsqVaeConfig& vae);

}  // namespace kvs::infinity
