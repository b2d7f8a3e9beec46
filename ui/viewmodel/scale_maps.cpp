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

std::vector<double> attentionDensityOnGrid(const kvs::AttentionMap& map, const ScaleLayout& layout, int64_t grid) {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(0, grid * grid)), 0.0);
  if (grid <= 0) return out;
  for (int64_t s = 0; s < layout.scales(); ++s) {
    const int64_t n = layout.sides[static_cast<size_t>(s)], b = layout.begin(s);
    if (n <= 0 || b + n * n > static_cast<int64_t>(map.weights.size())) break;
    // Cells covered by one source token of this scale (upsampled nearest, as the VQVAE's phi upsampling does).
    for (int64_t y = 0; y < grid; ++y)
      for (int64_t x = 0; x < grid; ++x) {
        const int64_t sy = y * n / grid, sx = x * n / grid;
        const double cells_per_token = static_cast<double>(grid * grid) / static_cast<double>(n * n);
        out[static_cast<size_t>(y * grid + x)] += std::max(0.0f, map.weights[static_cast<size_t>(b + sy * n + sx)]) /
                                                  cells_per_token;
      }
  }
  return out;
}

}  // namespace kvs::ui
