#pragma once
// Images drawn over the canvas, one pixel per token (the canvas scales them):
// attention heatmaps through OpenCV colormaps, retained-token masks, the small
// multiples of every layer x head, and per-pixel difference heatmaps. Torch-free;
// OpenCV stays inside the .cpp.
#include <QColor>
#include <QImage>
#include <QRect>
#include <QString>
#include <QVector>

#include <cstdint>

#include "engine/session/generation_events.h"

namespace kvs::ui {

struct TokenGrid {
  int64_t height = 0, width = 0;  // image tokens
  int64_t condition_tokens = 1;   // sequence positions before the image tokens
  int64_t tokens_done = 0;        // positions generated so far (image tokens)
  int64_t imageTokens() const { return height * width; }
};

// Attention of the latest line's last token over the image tokens, colour-mapped
// (inferno) after normalising by the largest image-token weight and a square-root
// gamma (attention is peaky); positions not generated yet are transparent.
// `alpha` is the overlay opacity (0-255).
QImage attentionHeatmap(const kvs::AttentionMap& map, const TokenGrid& grid, int alpha);
// The condition token(s), one pixel each in a column, coloured on the same scale
// as the whole map (condition included): the sink usually dominates.
QImage attentionConditionStrip(const kvs::AttentionMap& map, const TokenGrid& grid);
// Share of the attention mass on the condition token(s), 0..1.
double conditionAttentionShare(const kvs::AttentionMap& map, const TokenGrid& grid);
// A horizontal colour bar of the colormap, low on the left.
QImage colormapBar(int width, int height);

// Evicted image tokens dimmed: alpha = `dim` x (share of the selected heads that
// evicted the token); retained and not-yet-generated tokens are transparent.
// layer / head -1 select all layers / heads.
QImage retainedMaskOverlay(const kvs::RetainedMasks& masks, const TokenGrid& grid, int64_t layer, int64_t head,
                           int dim);
// One opaque tile per (layer, head): retained (light), evicted (dark red), not
// yet generated (near black).
QImage retainedMaskTile(const kvs::RetainedMasks& masks, const TokenGrid& grid, int64_t layer, int64_t head);
QColor retainedColor();
QColor evictedColor();
QColor pendingColor();

// |a - b| averaged over R, G, B per pixel, colour-mapped (inferno) with full
// scale at `full_scale` (0-255); `max_diff` receives the largest difference.
QImage differenceHeatmap(const QImage& a, const QImage& b, int full_scale, int* max_diff = nullptr);

// Regions of the active policy on the token grid (rectangles in token units,
// possibly several per region when it wraps rows).
struct PolicyRegion {
  QString label;
  QColor color;
  QVector<QRect> rects;
};
// The regions the active policy stated with its latest unit (UnitDoneEvent::
// regions, in sequence positions; LineAR's anchors / middle / recent lines,
// StreamingLLM's sinks / window), placed on the grid, then the line being
// generated (the row of grid.tokens_done) for every policy. Colours follow the
// region's name, so the same role looks the same across policies.
QVector<PolicyRegion> policyRegions(const std::vector<kvs::CacheRegion>& regions, const TokenGrid& grid);

}  // namespace kvs::ui
