#pragma once
// Sampling settings shared by every family (torch-free so the UI can hold them).
#include <cstdint>
#include <string>

namespace kvs {

// Where the random draws of sampling come from. Auto: a generator on the
// logits' device (on a GPU: sampling stays there and the decode loop never waits
// for the host); Cpu: the CPU generator on every device, so that a GPU run draws
// exactly the tokens a CPU run (and the official code after
// torch.manual_seed(seed)) draws for the same logits.
enum class SamplerRng { Auto, Cpu };

SamplerRng parse_sampler_rng(const std::string& name);  // "auto" | "device" | "cpu"; throws
const char* to_string(SamplerRng rng);

struct SamplingParams {
  double temperature = 1.0;  // logits / max(temperature, 1e-5), as upstream
  int64_t top_k = 0;         // 0 = off; ties with the k-th value survive
  double top_p = 1.0;        // 1 = off
  bool sample = true;        // false = arg-max
  SamplerRng rng = SamplerRng::Auto;

  // Throws InvalidArgumentError for negative temperature/top_k or top_p outside (0, 1].
  void validate() const;
};

}  // namespace kvs
