#pragma once
// The one sampler (LlamaGen generate.py sample / top_k_top_p_filtering order):
// temperature, then top-k, then top-p, softmax, multinomial. On the CPU (and on
// any device with SamplerRng::Cpu) it draws from a CPU generator seeded by the
// request's seed, so a seed gives the same tokens on any device — and the same
// tokens as the official code after torch.manual_seed(seed), which draws from
// the identical generator. With SamplerRng::Auto on a GPU the whole sampling,
// draw included, runs there from a device generator seeded the same way, and
// the ids stay on the device (no host round trip per token).
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
  // logits [B, V] on any device; returns int64 ids [B] on the device that drew
  // them (the logits' device with SamplerRng::Auto, else the CPU). probs_out, if
  // given, receives the sampling distribution [B, V] on that device.
  at::Tensor sample(const at::Tensor& logits, const SamplingParams& params, at::Tensor* probs_out = nullptr);

 private:
  at::Generator& generator_for(const at::Device& device);

  uint64_t seed_;
  at::Generator generator_;         // CPU
  at::Generator device_generator_;  // made at the first draw on a GPU
};

}  // namespace kvs
