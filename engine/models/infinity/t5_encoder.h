#pragma once
// T5's encoder (transformers T5EncoderModel) as Infinity's encode_prompt runs
// it: the shared embedding (unscaled), per layer an RMS LayerNorm, self-attention
// without 1/sqrt(d_kv) plus the bidirectional relative position bias that layer
// 0 owns and every layer reuses, an RMS LayerNorm and the gated gelu_new (or
// ReLU) feed-forward, then the final RMS LayerNorm. One unpadded sequence at a
// time: the official call pads to 512 but masks the pads as keys, so its kept
// rows are these up to rounding. In bf16/f16 the feed-forward's output
// projection stays float32, as transformers keeps "wo" (its _keep_in_fp32_modules).
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/models/infinity/t5_config.h"

namespace kvs::infinity {

class T5Encoder {
 public:
  // `weights`: the Hugging Face names (shared.weight, encoder.block.{i}...);
  // ModelMismatchError naming a missing or misshapen one.
  T5Encoder(T5Config config, const std::map<std::string, at::Tensor>& weights, at::Device device,
            at::ScalarType dtype = at::kFloat);

  // Every tensor the encoder reads, with its shape.
  static std::vector<std::pair<std::string, std::vector<int64_t>>> weight_names(const T5Config& config);

  const T5Config& config() const { return config_; }
  // ids [n] int64 -> last_hidden_state [n, d_model] float32.
  at::Tensor encode(const at::Tensor& ids) const;
  // The relative position buckets [n, n] (key - query), as _relative_position_bucket computes them.
  at::Tensor position_buckets(int64_t n) const;

 private:
  struct Layer {
    at::Tensor ln1, q, k, v, o, ln2, wi0, wi1, wo;
  };
  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight) const;

  T5Config config_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor shared_, relative_bias_, final_norm_;
  std::vector<Layer> layers_;
};

}  // namespace kvs::infinity
