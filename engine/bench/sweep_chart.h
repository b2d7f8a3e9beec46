#pragma once
// The pictures of a sweep (bench_sweep.h), drawn with OpenCV (only in the
// .cpp); torch-free header.
// - The grid: the bench's first image (run 0, image 0: the same seed and class
//   everywhere) under every spec, a row per policy and a column per value, with
//   the full cache's image at the left of every row for comparison.
// - The chart: against the swept value (one point per value, in the order
//   given), the KV cache kept as a share of the full cache, and the quality:
//   class accuracy where the bundle judges it, else token agreement with the
//   full cache; a line per policy, the full cache's level dashed.
#include <vector>

#include "engine/bench/bench_sweep.h"
#include "engine/image/rgb_image.h"

namespace kvs {

// images[p][v]: the image of sweep.specs[p][v] (an empty image leaves its cell blank).
RgbImage draw_sweep_grid(const BenchSweep& sweep, const RgbImage& full,
                         const std::vector<std::vector<RgbImage>>& images);
RgbImage draw_sweep_chart(const BenchSweep& sweep, const std::vector<BenchRecord>& records);

}  // namespace kvs
