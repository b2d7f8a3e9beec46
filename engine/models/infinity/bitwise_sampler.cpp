#include "engine/models/infinity/bitwise_sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <limits>

#include "engine/core/errors.h"

namespace kvs::infinity {

at::Tensor filter_bit_logits(const at::Tensor& logits_in, const BitSampling& sampling) {
  at::Tensor logits = logits_in.to(at::kFloat).clone();
  const int64_t vocab = logits.size(-1);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (sampling.top_k > 0) {
    const int64_t k = std::min<int64_t>(sampling.top_k, vocab);
    const at::Tensor kth = std::get<0>(logits.topk(k, -1, /*largest=*/true, /*sorted=*/false)).amin(-1, true);
    logits.masked_fill_(logits < kth, minus_inf);
  }
  if (sampling.top_p > 0.0) {
    auto [sorted, order] = logits.sort(-1, /*descending=*/false);
    at::Tensor remove = sorted.softmax(-1).cumsum(-1) <= (1.0 - sampling.top_p);
    remove.narrow(-1, vocab - 1, 1).fill_(false);
    logits.masked_fill_(remove.scatter(-1, order, remove), minus_inf);
  }
  return logits;
}

BitwiseSampler::BitwiseSampler(uint64_t seed) : generator_(at::detail::createCPUGenerator(seed)) {}

at::Tensor BitwiseSampler::draw(int64_t bits) {
  return at::empty({bits, 2}, at::TensorOptions().dtype(at::kFloat)).exponential_(1.0, generator_);
}

at::Tensor BitwiseSampler::sample(const at::Tensor& logits, const BitSampling& sampling, const at::Tensor& draws) {
  if (logits.dim() != 3 || logits.size(2) != 2)
    throw InvalidArgumentError("bit logits must be [B, bits, 2], got " + c10::str(logits.sizes()));
  const int64_t b = logits.size(0), n = logits.size(1);
  const at::Tensor probs = filter_bit_logits(logits.to(at::kCPU), sampling).softmax(-1).view({b * n, 2});
  const at::Tensor q = draws.defined() ? draws.to(at::kCPU, at::kFloat).reshape({b * n, 2}) : draw(b * n);
  return (probs / q).argmax(-1).view({b, n});
}

}  // namespace kvs::infinity
