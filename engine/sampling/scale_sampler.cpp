#include "engine/sampling/scale_sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <limits>

namespace kvs {

at::Tensor filter_var_top_k_top_p(const at::Tensor& input, int64_t top_k, double top_p) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  at::Tensor logits = input.clone();
  const int64_t vocab = logits.size(-1);
  if (top_k > 0) {
    // logits < topk(top_k).amin(): ties with the k-th value survive.
    const int64_t k = std::min<int64_t>(top_k, vocab);
    at::Tensor kth =
        std::get<0>(at::topk(logits, k, -1, /*largest=*/true, /*sorted=*/false)).amin(-1, /*keepdim=*/true);
    logits.masked_fill_(logits < kth, neg_inf);
  }
  if (top_p > 0 && top_p < 1.0) {
    auto [sorted, sorted_idx] = at::sort(logits, -1, /*descending=*/false);
    at::Tensor remove_sorted = at::cumsum(at::softmax(sorted, -1), -1) <= (1.0 - top_p);
    remove_sorted.narrow(-1, vocab - 1, 1).fill_(false);  // the most likely token always stays
    logits.masked_fill_(remove_sorted.scatter(-1, sorted_idx, remove_sorted), neg_inf);
  }
  return logits;
}

ScaleSampler::ScaleSampler(uint64_t seed) : generator_(at::detail::createCPUGenerator(seed)) {}

at::Tensor ScaleSampler::sample(const at::Tensor& logits_in, const SamplingParams& params) {
  const int64_t b = logits_in.size(0), l = logits_in.size(1), vocab = logits_in.size(2);
  at::Tensor logits = logits_in.to(at::kCPU, at::kFloat);
  if (params.temperature != 1.0) logits = logits / std::max(params.temperature, 1e-5);
  if (params.top_k > 0 || params.top_p < 1.0) logits = filter_var_top_k_top_p(logits, params.top_k, params.top_p);
  if (!params.sample) return logits.argmax(-1);
  // torch.multinomial(softmax.view(-1, V), 1, replacement=True, generator=rng); at::multinomial
  // takes the generator's own lock.
  at::Tensor probs = at::softmax(logits, -1).reshape({b * l, vocab});
  return at::multinomial(probs, 1, /*replacement=*/true, generator_).view({b, l});
}

}  // namespace kvs
