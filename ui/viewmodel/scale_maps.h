#pragma once
// VAR's cache and attention summarised per scale, for the canvas side panel and
// the heads x scales cache map: a head of a next-scale model keeps or drops
// whole scales (HeatKV, AMS-KV, streaming over scales), so "which scales does
// this head still hold" is the question a person asks, not "which pixels".
#include <cstdint>
#include <vector>

#include "engine/session/generation_events.h"
#include "ui/viewmodel/model_family.h"

namespace kvs::ui {

// Share (0..1) of each scale's positions that the selected layer/head still
// caches; layer / head -1: mean over all. Scales beyond `scales_done` are -1
// (not generated yet).
std::vector<double> retainedShareByScale(const kvs::RetainedMasks& masks, const ScaleLayout& layout, int64_t layer,
                                         int64_t head, int64_t scales_done);

// The attention mass (0..1, summing to 1 over the generated scales) that the
// map's queries put on each source scale's positions.
std::vector<double> attentionMassByScale(const kvs::AttentionMap& map, const ScaleLayout& layout);

// Where on the image the map's queries look, over every scale at once: each
// source position spreads its weight evenly over the final-grid cells it covers
// (a 2x2-scale token covers a quarter of the image), so coarse scales read as
// broad context and fine scales as detail. Row-major over the final grid's
// grid_height x grid_width cells (rectangular for Infinity's aspect templates).
std::vector<double> attentionDensityOnGrid(const kvs::AttentionMap& map, const ScaleLayout& layout, int64_t grid_height,
                                           int64_t grid_width);

}  // namespace kvs::ui
