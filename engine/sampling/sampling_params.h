#pragma once
// Sampling settings shared by every family (torch-free so the UI can hold them).
#include <cstdint>

namespace kvs {

struct SamplingParams {
  double temperature = 1.0;  // logits / max(temperature, 1e-5), as upstream
  int64_t top_k = 0;         // 0 = off; ties with the k-th value survive
  double top_p = 1.0;        // 1 = off
  bool sample = true;        // false = arg-max

  // Throws InvalidArgumentError for negative temperature/top_k or top_p outside (0, 1].
  void validate() const;
};

}  // namespace kvs
