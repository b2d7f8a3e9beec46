#pragma once
// What a finished generation returns: the images, their tokens and the
// run's time, memory and FLOPs. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/image/rgb_image.h"

namespace kvs {

struct GenerationResult {
  std::string model_name;
  std::string device;
  std::vector<RgbImage> images;              // one per class id
  std::vector<std::vector<int32_t>> tokens;  // token ids per image: raster order, or (VAR) all scales
                                             // flattened, coarsest first; (MAR, continuous tokens)
                                             // the token positions in generation order
  int64_t grid_height = 0, grid_width = 0;
  double elapsed_ms = 0;
  double tokens_per_second = 0;  // per image
  int64_t kv_bytes_peak = 0;
  int64_t kv_bytes_logical_final = 0;  // retained at the end
  int64_t kv_bytes_full = 0;           // the uncompressed cache at the end
  std::string policy;                  // the spec active at the end
  double flops = 0;                    // masked models (MAR): matmul/attention FLOPs per image
                                       // executed, counted (engine/models/mar/mar_flops.h); 0 otherwise
  std::string cuda_graphs = "n/a";     // how the decode steps ran: on | partly | off | failed | not built |
                                       // n/a (engine/core/cuda_graphs.h)
};

}  // namespace kvs
