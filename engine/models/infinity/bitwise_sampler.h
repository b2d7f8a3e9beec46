#pragma once
// Infinity's per-bit sampler (infinity.py
// sample_with_top_k_top_p_also_inplace_modifying_logits_ over V = 2): top-k
// (min(k, 2): 1 is greedy with ties kept, 2 or more removes nothing), then top-p
// (sorted ascending, an entry goes when the cumulative probability up to it is
// at most 1 - top_p, never the largest), then one multinomial draw per bit. On
// the CPU torch.multinomial with one sample is argmax(probs / q) with q an
// Exp(1) tensor of the probabilities' shape, so drawing q as one [bits, 2]
// tensor per scale from a CPU generator seeded like torch.Generator()
// .manual_seed(seed) gives the official draws, bit for bit (the official
// production draws on its CUDA generator instead, which no CPU can replay).
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvs::infinity {

struct BitSampling {
  int64_t top_k = 900;  // gen_one_img's default (a no-op over two values)
  double top_p = 0.97;  // 0 = off
};

// The filtered logits [..., 2] (removed entries -inf), as the official sampler leaves them.
at::Tensor filter_bit_logits(const at::Tensor& logits, const BitSampling& sampling);

class BitwiseSampler {
 public:
  explicit BitwiseSampler(uint64_t seed);
  // The Exp(1) draws of one scale: [bits, 2] float32 (CPU), consumed in order.
  at::Tensor draw(int64_t bits);
  // logits [B, n, 2] (float32, guided) -> bits [B, n] int64 (CPU): this
  // scale's draws are taken from the generator unless `draws` ([B * n, 2] or
  // [B, n, 2]) is given, which replays recorded ones.
  at::Tensor sample(const at::Tensor& logits, const BitSampling& sampling, const at::Tensor& draws = {});

 private:
  at::Generator generator_;
};

}  // namespace kvs::infinity
