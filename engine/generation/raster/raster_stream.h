#pragma once
// A raster family's run in the window, the CLI and the benchmark: one unit per
// line. Emits StartedEvent (unit "line"), a TokenProgressEvent per token and a
// UnitDoneEvent per line (KV memory, retained masks, the attention of the
// line's last token over the condition and the image so far, a preview decoded
// with code 0 for the rows not generated yet), and PolicyChangedEvent at line
// boundaries (the new policy adopts the cache as it stands); returns the images
// and the run's memory. The family hands in its network and what it knows of
// the run (RasterRun); the events are the same for every raster family.
#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/raster/raster_loop.h"
#include "engine/image/rgb_image.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::raster {

struct RasterRun {
  std::string model_name;
  std::string family;  // StartedEvent::family ("llamagen", "janus-pro")
  RasterShape shape;
  int64_t grid_height = 0, grid_width = 0;    // the image's token grid
  std::vector<std::string> condition_labels;  // the condition's readable tokens (text families)
  int64_t query_heads_per_kv_head = 1;        // grouped-query attention: the attention map averages them
  PolicyContext policy_context;               // where the request's policy is built (and a changed one)
  RasterParams params;
  // codes [B, image_tokens] (CPU int64) -> the pictures.
  std::function<std::vector<RgbImage>(const at::Tensor& codes)> decode;
  // A picture -> its codes [image_tokens] (CPU int64), scaled and cut to the
  // image's size: what finishing a picture keeps the top rows of. Unset when the
  // model has no image encoder (such a request is then refused).
  std::function<at::Tensor(const RgbImage& picture)> encode;
};

// The given tokens of a request that finishes a picture ([batch, keep_rows *
// grid_width], the picture's top rows for every image), or an undefined tensor
// when it finishes none. Throws InvalidArgumentError when the model cannot read
// a picture or the rows do not leave one to draw, FileError / FormatError for
// an unreadable PNG.
at::Tensor given_rows(const RasterRun& run, const GenerationRequest& request);

// Runs `network` under the request's policy (and any change asked for at a line
// end); `raster`, when given, receives the loop's own result (graph steps, tokens).
GenerationResult stream_raster(RasterNetwork& network, const RasterRun& run, const GenerationRequest& request,
                               const RunContext& context, RasterResult* raster = nullptr);

}  // namespace kvs::raster
