#include "engine/sampling/token_sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <limits>

#include "engine/core/errors.h"

namespace kvs {

SamplerRng parse_sampler_rng(const std::string& name) {
  if (name == "auto" || name == "device") return SamplerRng::Auto;
  if (name == "cpu") return SamplerRng::Cpu;
  throw InvalidArgumentError("unknown sampler RNG '" + name + "' (expected auto, device or cpu)");
}

const char* to_string(SamplerRng rng) { return rng == SamplerRng::Cpu ? "cpu" : "auto"; }

void SamplingParams::validate() const {
  if (!(temperature >= 0)) throw InvalidArgumentError("temperature must be >= 0");
  if (top_k < 0) throw InvalidArgumentError("top-k must be >= 0 (0 = off)");
  if (!(top_p > 0 && top_p <= 1)) throw InvalidArgumentError("top-p must be in (0, 1] (1 = off)");
}

at::Tensor combine_cfg(const at::Tensor& logits, double scale) {
  const int64_t half = logits.size(0) / 2;
  at::Tensor cond = logits.narrow(0, 0, half), uncond = logits.narrow(0, half, half);
  return uncond + (cond - uncond) * scale;
}

at::Tensor filter_top_k_top_p(const at::Tensor& input, int64_t top_k, double top_p) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  at::Tensor logits = input.clone();
  if (top_k > 0) {
    const int64_t k = std::min<int64_t>(std::max<int64_t>(top_k, 1), logits.size(-1));
    at::Tensor kth = std::get<0>(at::topk(logits, k)).select(-1, k - 1).unsqueeze(-1);
    logits.masked_fill_(logits < kth, neg_inf);
  }
  if (top_p < 1.0) {
    auto [sorted, indices] = at::sort(logits, -1, /*descending=*/true);
    at::Tensor cumulative = at::cumsum(at::softmax(sorted, -1), -1);
    at::Tensor remove = cumulative > top_p;
    // Shift right so the first token above the threshold is kept; never remove the best.
    at::Tensor shifted = at::zeros_like(remove);
    shifted.narrow(-1, 1, remove.size(-1) - 1).copy_(remove.narrow(-1, 0, remove.size(-1) - 1));
    at::Tensor to_remove = shifted.scatter(1, indices, shifted);
    logits.masked_fill_(to_remove, neg_inf);
  }
  return logits;
}

TokenSampler::TokenSampler(uint64_t seed) : seed_(seed), generator_(at::detail::createCPUGenerator(seed)) {}

at::Generator& TokenSampler::generator_for(const at::Device& device) {
  if (device.is_cpu()) return generator_;
  if (!device_generator_.defined() || device_generator_.device() != device) {
    // A generator of the device's own, seeded by the request: the same seed
    // gives the same tokens on the same GPU model and LibTorch.
    device_generator_ = at::globalContext().getAcceleratorHooksInterface(device.type()).getNewGenerator(device.index());
    device_generator_.set_current_seed(seed_);
  }
  return device_generator_;
}

at::Tensor TokenSampler::sample(const at::Tensor& logits_in, const SamplingParams& params, at::Tensor* probs_out) {
  const bool on_device = params.rng == SamplerRng::Auto && !logits_in.device().is_cpu();
  const at::Device device = on_device ? logits_in.device() : at::Device(at::kCPU);
  at::Tensor logits = logits_in.to(device, at::kFloat) / std::max(params.temperature, 1e-5);
  if (params.top_k > 0 || params.top_p < 1.0) logits = filter_top_k_top_p(logits, params.top_k, params.top_p);
  at::Tensor probs = at::softmax(logits, -1);
  at::Tensor ids;
  if (params.sample) {
    // at::multinomial takes the generator's own lock; on a GPU one sample
    // without replacement is an exponential draw and an arg-max, no host wait.
    ids = at::multinomial(probs, 1, /*replacement=*/false, generator_for(device)).squeeze(-1);
  } else {
    ids = std::get<1>(at::topk(probs, 1)).squeeze(-1);
  }
  if (probs_out != nullptr) *probs_out = probs;
  return ids;
}

}  // namespace kvs
