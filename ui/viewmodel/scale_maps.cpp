#include "ui/viewmodel/scale_maps.h"

#include <algorithm>

namespace kvs::ui {

std::vector<double> retainedShareByScale(const kvs::RetainedMasks& masks, const ScaleLayout& layout, int64_t layer,
                                         int64_t head, int64_t scales_done) {
  std::vector<double> out(static_cast<size_t>(layout.scales()), -1.0);
  const int64_t l0 = layer < 0 ? 0 : std::min(layer, masks.n_layer),
                l1 = layer < 0 ? masks.n_layer : std::min(layer + 1, masks.n_layer);
  const int64_t h0 = head < 0 ? 0 : std::min(head, masks.kv_heads),
                h1 = head < 0 ? masks.kv_heads : std::min(head + 1, masks.kv_heads);
  for (int64_t s = 0; s < std::min(scales_done, layout.scales()); ++s) {
    const int64_t b = layout.begin(s), n = layout.tokens(s);
    int64_t kept = 0, counted = 0;
    for (int64_t l = l0; l < l1; ++l)
      for (int64_t h = h0; h < h1; ++h)
        for (int64_t p = b; p < b + n && p < masks.positions; ++p) {
          kept += masks.retained(l, h, p) ? 1 : 0;
          ++counted;
        }
    out[static_cast<size_t>(s)] = counted > 0 ? static_cast<double>(kept) / static_cast<double>(counted) : 0.0;
  }
  return out;
}

std::vector<double> attentionMassByScale(const kvs::AttentionMap& map, const ScaleLayout& layout) {
  std::vector<double> out(static_cast<size_t>(layout.scales()), 0.0);
  double total = 0;
  for (size_t p = 0; p < map.weights.size(); ++p) {
    const int64_t s = layout.scaleOf(static_cast<int64_t>(p));
    if (s < 0) continue;
    const double w = std::max(0.0f, map.weights[p]);
    out[static_cast<size_t>(s)] += w;
    total += w;
  }
  if (total > 0)
    for (double& v : out) v /= total;
  return out;
}

std::vector<double> attentionDensityOnGrid(const kvs::AttentionMap& map, const ScaleLayout& layout, int64_t grid_height,
                                           int64_t grid_width) {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(0, grid_height * grid_width)), 0.0);
  if (grid_height <= 0 || grid_width <= 0) return out;
  for (int64_t s = 0; s < layout.scales(); ++s) {
    const int64_t h = layout.height(s), w = layout.width(s), b = layout.begin(s);
    if (h <= 0 || w <= 0 || b + h * w > static_cast<int64_t>(map.weights.size())) break;
    // Cells covered by one source token of this scale (upsampled nearest, as the VQVAE's phi upsampling does).
    const double cells_per_token = static_cast<double>(grid_height * grid_width) / static_cast<double>(h * w);
    for (int64_t y = 0; y < grid_height; ++y)
      for (int64_t x = 0; x < grid_width; ++x) {
        const int64_t sy = y * h / grid_height, sx = x * w / grid_width;
        out[static_cast<size_t>(y * grid_width + x)] +=
            std::max(0.0f, map.weights[static_cast<size_t>(b + sy * w + sx)]) / cells_per_token;
      }
  }
  return out;
}

}  // namespace kvs::ui
