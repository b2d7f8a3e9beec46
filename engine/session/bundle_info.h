#pragma once
// Pieces of `kvstudio-cli info` that every family writes the same way.
// Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/session/model_family.h"

namespace kvs {

// Stored parameters per part of a bundle's weights file — a tensor counts for
// the first prefix its name starts with, the last part takes the rest — and the
// stored dtypes ("F16,F32").
struct StoredWeights {
  std::vector<int64_t> params;
  std::string dtypes;
};
StoredWeights stored_weights(const std::string& weights_path, const std::vector<std::string>& prefixes);

// The KV cache of one sequence of `tokens` entries: float32 and half sizes, the
// full image, and the CFG doubling.
std::string kv_cache_text(int64_t kv_bytes_per_token_f32, int64_t tokens);

// "1,2,3"
std::string join_ints(const std::vector<int64_t>& values);

// printf into a std::string (for info lines).
std::string format_text(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kvs
