#pragma once
// The one sampler (LlamaGen generate.py sample / top_k_top_p_filtering order):
// temperature, then top-k, then top-p, softmax, multinomial. Sampling always runs
// on the CPU with a CPU generator seeded by the request's seed, so a seed gives
// the same tokens on any device — and the same tokens as the official code after
// torch.manual_seed(seed), which draws from the identical generator.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/sampling/sampling_params.h"

namespace kvs {

// [2B, V] laid out [cond; uncond] -> uncond + (cond - uncond) * scale, [B, V].
at::Tensor combine_cfg(const at::Tensor& logits, double scale);

// Returns filtered logits (a copy); removed entries are -inf.
at::Tensor filter_top_k_top_p(const at::Tensor& logits, int64_t top_k, double top_p);

class TokenSampler {
 public:
  explicit TokenSampler(uint64_t seed);
  // logits [B, V] on any device; returns int64 ids [B] on the CPU. probs_out, if
  // given, receives the sampling distribution [B, V] (CPU).
  at::Tensor sample(const at::Tensor& logits, const SamplingParams& params, at::Tensor* probs_out = nullptr);

 private:
  at::Generator generator_;
};

}  // namespace kvs
