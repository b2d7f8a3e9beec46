#pragma once
// The next-scale family's sampler: VAR's sample_with_top_k_top_p_ (models/helpers.py)
// over a whole scale of logits [B, l, V] at once. It shares the seeded CPU
// generator convention of TokenSampler (sampling on the CPU, so a seed gives the
// same ids on any device and the same ids as the official code after
// rng.manual_seed(seed)), but keeps VAR's own filtering, which differs from
// LlamaGen's:
//   - top-k masks logits below the k-th largest (ties survive), as LlamaGen;
//   - top-p sorts ASCENDING and removes tokens whose cumulative probability is
//     <= 1 - top_p, never the most likely one. Upstream spells "off" as top_p = 0;
//     SamplingParams spells it 1 (which removes nothing here either);
//   - one multinomial draw per token over the flattened [B*l, V] rows.
// Temperature is not part of upstream VAR: 1 (the default) leaves the logits
// untouched; other values divide them as in LlamaGen. sample = false takes the
// arg-max of the filtered logits.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "engine/sampling/sampling_params.h"

namespace kvs {

// Filtered copy of logits [..., V]; removed entries are -inf. top_p >= 1 = off.
at::Tensor filter_var_top_k_top_p(const at::Tensor& logits, int64_t top_k, double top_p);

class ScaleSampler {
 public:
  explicit ScaleSampler(uint64_t seed);
  // logits [B, l, V] on any device -> int64 ids [B, l] on the CPU.
  at::Tensor sample(const at::Tensor& logits, const SamplingParams& params);

 private:
  at::Generator generator_;
};

}  // namespace kvs
