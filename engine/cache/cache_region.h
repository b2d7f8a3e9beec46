#pragma once
// A part of the KV cache a policy treats by one rule (LineAR's anchors, middle
// and recent lines; StreamingLLM's sinks and window), as the policy itself
// describes it: torch-free, so the events and the window carry it as is.
#include <cstdint>
#include <string>

namespace kvs {

struct CacheRegion {
  std::string name;   // what the region is: "anchors", "middle", "recent", "buffer", "sinks", "window"
  std::string label;  // for people: "recent lines"
  // Sequence positions [begin, end), indexed as RetainedMasks and AttentionMap
  // are (condition token(s) first, then the image tokens in generation order).
  int64_t begin = 0, end = 0;
};

}  // namespace kvs
