#include "engine/cache/policies/full_policy.h"

namespace kvs {

PolicyInfo full_policy_info() {
  PolicyInfo info{"full", "no eviction: the uncompressed KV cache (masked models: full recomputation every step)", "-", {},
                  [](const PolicyParams&, const PolicyContext& c) { return std::make_unique<FullPolicy>(c); }};
  info.families = {"raster", "scale", "masked"};
  return info;
}

}  // namespace kvs
