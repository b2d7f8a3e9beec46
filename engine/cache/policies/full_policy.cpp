#include "engine/cache/policies/full_policy.h"

namespace kvs {

PolicyInfo full_policy_info() {
  return {{"full",
           "no eviction: the uncompressed KV cache (masked models: full recomputation every step)",
           "-",
           {},
           {"raster", "scale", "masked"}},
          [](const PolicyParams&, const PolicyContext& c) { return std::make_unique<FullPolicy>(c); }};
}

}  // namespace kvs
