#pragma once
// A PNG-ready bar chart of a policy benchmark: per policy, the KV cache retained
// at the end as a share of the full cache (and the allocated share as a thin
// bar), and the generation speed in image tokens per second. Drawn with OpenCV
// (only in the .cpp); torch-free header.
#include <vector>

#include "engine/bench/policy_bench.h"
#include "engine/image/rgb_image.h"

namespace kvs {

RgbImage draw_bench_chart(const std::vector<BenchRecord>& records);

}  // namespace kvs
