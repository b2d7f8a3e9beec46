// GenerationCanvas: the next-scale (VAR) and masked (MAR) painters. The raster
// painter, the layout and the placeholder are in generation_canvas.cpp.
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "ui/render/overlay_images.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/viewmodel/scale_maps.h"
#include "ui/widgets/canvas_constants.h"
#include "ui/widgets/generation_canvas.h"

namespace kvs::ui {
namespace {

const QColor kPanelText(200, 204, 214);
const QColor kPanelDim(150, 155, 168);
const QColor kPredictedNow(120, 255, 255);
const QColor kReusedHatch(120, 170, 255);

QColor mix(const QColor& a, const QColor& b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
                          static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
                          static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

// One inferno colour for a value in 0..1 (the colormap bar's pixel).
QColor infernoColor(double v) {
  static const QImage bar = colormapBar(256, 1);
  return QColor(bar.pixel(std::clamp(static_cast<int>(std::lround(v * 255.0)), 0, 255), 0));
}

// Not "%1²".arg(): Qt reads the superscript two as a digit of the placeholder.
QString scaleLabel(const ScaleLayout& layout, int64_t scale) {
  const int64_t h = layout.height(scale), w = layout.width(scale);
  return h == w ? QString::number(h) + QChar(0x00B2) : QString::number(h) + QChar(0x00D7) + QString::number(w);
}

}  // namespace

void GenerationCanvas::paintScale(QPainter& p, const QRect& img) {
  const RunViewModel* run = run_.data();
  const ScaleLayout& layout = run->scaleLayout();
  const auto& unit = run->lastUnit();
  const int64_t grid_w = std::max<int64_t>(1, run->started().grid_width);
  const int64_t grid_h = run->started().grid_height > 0 ? run->started().grid_height : grid_w;
  // VAR decodes the whole image at every scale (f_hat so far): nothing is
  // "not generated yet" on the picture, it only gets sharper.
  const QImage& preview = run->preview();
  p.setRenderHint(QPainter::SmoothPixmapTransform, img.width() < 2 * preview.width());
  p.drawImage(img, preview);
  p.setRenderHint(QPainter::SmoothPixmapTransform, false);

  const bool attention = (overlays_ & kOverlayAttention) && unit && unit->attention && layout.scales() > 0;
  if (attention) {
    kvs::AttentionMap density;
    density.positions = grid_h * grid_w;
    const std::vector<double> d = attentionDensityOnGrid(*unit->attention, layout, grid_h, grid_w);
    density.weights.assign(d.begin(), d.end());
    TokenGrid g{grid_h, grid_w, 0, grid_h * grid_w};
    p.drawImage(img, attentionHeatmap(density, g, attention_alpha_));
  }
  if (overlays_ & kOverlayGrid) {
    // The grid of the scale just decoded: how coarse the tokens still are.
    const bool known = unit && unit->unit_index < layout.scales();
    const int64_t rows = std::max<int64_t>(1, known ? layout.height(unit->unit_index) : grid_h);
    const int64_t cols = std::max<int64_t>(1, known ? layout.width(unit->unit_index) : grid_w);
    const double cw = static_cast<double>(img.width()) / static_cast<double>(cols);
    const double ch = static_cast<double>(img.height()) / static_cast<double>(rows);
    p.setPen(QColor(255, 255, 255, 40));
    for (int64_t i = 1; i < cols; ++i)
      p.drawLine(QPointF(img.left() + i * cw, img.top()), QPointF(img.left() + i * cw, img.bottom()));
    for (int64_t i = 1; i < rows; ++i)
      p.drawLine(QPointF(img.left(), img.top() + i * ch), QPointF(img.right(), img.top() + i * ch));
  }
  p.setPen(QColor(70, 75, 88));
  p.drawRect(img.adjusted(0, 0, -1, -1));
  if (wantsScalePanel()) paintScalePanel(p, scalePanelRect(img));

  if (compact_ || !(overlays_ & (kOverlayAttention | kOverlayRetained))) return;
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  int x = img.left();
  const int y = img.bottom() + 14;
  if (overlays_ & kOverlayAttention) {
    p.drawImage(QRect(x, y, 90, kSwatch), colormapBar(90, 1));
    x += 96;
    const QString layer = unit && unit->attention && unit->attention->layer >= 0 ? tr("L%1").arg(unit->attention->layer)
                                                                                 : tr("mean L");
    const QString head = unit && unit->attention && unit->attention->head >= 0 ? tr("H%1").arg(unit->attention->head)
                                                                               : tr("mean H");
    legendText(p, x, y, tr("where the latest scale's queries look on the image, all scales (%1, %2)").arg(layer, head));
  }
  int x2 = img.left();
  legendText(p, x2, y + kSwatch + 8,
             tr("The picture is the whole image decoded from the scales so far (f̂); it sharpens scale by scale."));
}

void GenerationCanvas::paintScalePanel(QPainter& p, const QRect& panel) {
  const RunViewModel* run = run_.data();
  const ScaleLayout& layout = run->scaleLayout();
  const auto& unit = run->lastUnit();
  const int64_t n = layout.scales();
  p.fillRect(panel, QColor(28, 31, 38));
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  const QFontMetrics fm(f);
  if (n == 0 || !unit) {
    p.setPen(kPanelDim);
    p.drawText(panel.adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
               tr("scale maps appear with the first scale"));
    return;
  }
  const int64_t done = std::min(n, unit->unit_index + 1);
  int labelW = fm.horizontalAdvance(QStringLiteral("16²")) + 6;
  for (int64_t s = 0; s < n; ++s) labelW = std::max(labelW, fm.horizontalAdvance(scaleLabel(layout, s)) + 6);
  int y = panel.top() + 4;
  const double cellW = (panel.width() - labelW - 8) / static_cast<double>(n);

  // Scale-to-scale attention: row = the querying scale, column = the source scale.
  if (overlays_ & kOverlayAttention) {
    p.setPen(kPanelText);
    p.drawText(QRect(panel.left() + 4, y, panel.width() - 8, fm.height()), Qt::AlignLeft,
               tr("attention mass: scale → scale"));
    y += fm.height() + 2;
    const auto& rows = run->scaleAttention();
    const double cellH = std::min(cellW, (panel.height() * 0.42 - 2 * fm.height()) / static_cast<double>(n));
    for (int64_t q = 0; q < n; ++q) {
      const double ry = y + q * cellH;
      p.setPen(q == done - 1 ? QColor(255, 214, 64) : kPanelDim);
      if (cellH >= fm.height() * 0.8 || q % 2 == 0)
        p.drawText(QRectF(panel.left(), ry, labelW, cellH), Qt::AlignRight | Qt::AlignVCenter, scaleLabel(layout, q));
      const bool have = static_cast<size_t>(q) < rows.size() && !rows[static_cast<size_t>(q)].empty();
      double peak = 0;
      if (have)
        for (double v : rows[static_cast<size_t>(q)]) peak = std::max(peak, v);
      for (int64_t s = 0; s < n; ++s) {
        const QRectF c(panel.left() + labelW + 4 + s * cellW, ry, cellW - 1, cellH - 1);
        if (!have || s > q) {
          p.fillRect(c, pendingColor());
          continue;
        }
        const double v = rows[static_cast<size_t>(q)][static_cast<size_t>(s)];
        p.fillRect(c, infernoColor(peak > 0 ? std::sqrt(v / peak) : 0));
      }
      if (q == done - 1) {
        p.setPen(QPen(QColor(255, 214, 64), 1.5));
        p.drawRect(QRectF(panel.left() + labelW + 4, ry, n * cellW - 1, cellH - 1));
      }
    }
    y += static_cast<int>(n * cellH) + 2;
    p.setPen(kPanelDim);
    p.drawText(QRect(panel.left() + 4, y, panel.width() - 8, fm.height() * 2), Qt::AlignLeft | Qt::TextWordWrap,
               tr("rows: querying scale · columns: source scale · bright = more mass (per row)"));
    y += fm.height() * 2 + 8;
  }

  // Retained share of each scale, per head, for the chosen layer (or the mean).
  if ((overlays_ & kOverlayRetained) && unit->retained) {
    const kvs::RetainedMasks& m = *unit->retained;
    p.setPen(kPanelText);
    const QString layer = mask_layer_ < 0 ? tr("mean L") : tr("L%1").arg(mask_layer_);
    p.drawText(QRect(panel.left() + 4, y, panel.width() - 8, fm.height()), Qt::AlignLeft,
               tr("cached share: head × scale (%1)").arg(layer));
    y += fm.height() + 2;
    const int64_t heads = m.kv_heads;
    const int bottom = panel.bottom() - fm.height() * 3 - 8;
    const double cellH = std::clamp((bottom - y) / static_cast<double>(std::max<int64_t>(1, heads)), 3.0, cellW);
    for (int64_t h = 0; h < heads; ++h) {
      const std::vector<double> share = retainedShareByScale(m, layout, mask_layer_, h, done);
      const double ry = y + h * cellH;
      const bool chosen = mask_head_ == h;
      p.setPen(chosen ? QColor(255, 214, 64) : kPanelDim);
      if (cellH >= fm.height() * 0.8)
        p.drawText(QRectF(panel.left(), ry, labelW, cellH), Qt::AlignRight | Qt::AlignVCenter,
                   QStringLiteral("H%1").arg(h));
      for (int64_t s = 0; s < n; ++s) {
        const QRectF c(panel.left() + labelW + 4 + s * cellW, ry, cellW - 1, cellH - 1);
        const double v = share[static_cast<size_t>(s)];
        p.fillRect(c, v < 0 ? pendingColor() : mix(evictedColor(), retainedColor(), v));
      }
      if (chosen) {
        p.setPen(QPen(QColor(255, 214, 64), 1.5));
        p.drawRect(QRectF(panel.left() + labelW + 4, ry, n * cellW - 1, cellH - 1));
      }
    }
    y += static_cast<int>(heads * cellH) + 4;
    // Column labels under the matrix: the scales' sides (their heights where they are not square; the
    // rows above name both).
    p.setPen(kPanelDim);
    for (int64_t s = 0; s < n; ++s)
      if (cellW >= fm.horizontalAdvance(QStringLiteral("16")) || s % 2 == 0)
        p.drawText(QRectF(panel.left() + labelW + 4 + s * cellW, y, cellW, fm.height()), Qt::AlignCenter,
                   QString::number(layout.height(s)));
    y += fm.height() + 4;
    int x = panel.left() + 4;
    drawSwatch(p, QRect(x, y, kSwatch, kSwatch), retainedColor());
    x += kSwatch + 4;
    legendText(p, x, y, tr("cached"));
    drawSwatch(p, QRect(x, y, kSwatch, kSwatch), evictedColor());
    x += kSwatch + 4;
    legendText(p, x, y, tr("evicted"));
    drawSwatch(p, QRect(x, y, kSwatch, kSwatch), pendingColor(), QColor(70, 75, 88));
    x += kSwatch + 4;
    legendText(p, x, y, tr("not yet"));
  }
}

void GenerationCanvas::paintMasked(QPainter& p, const QRect& img) {
  const RunViewModel* run = run_.data();
  const kvs::StartedEvent& s = run->started();
  TokenGrid grid;
  grid.height = std::max<int64_t>(1, s.grid_height);
  grid.width = std::max<int64_t>(1, s.grid_width);
  grid.tokens_done = grid.imageTokens();  // MAR attends over every position: no raster "done" prefix
  const auto& unit = run->lastUnit();
  if (unit && unit->attention)
    grid.condition_tokens = std::max<int64_t>(0, unit->attention->positions - grid.imageTokens());
  const double cell = static_cast<double>(img.width()) / static_cast<double>(grid.width);
  const bool finished = run->state() == RunState::Finished;

  const QImage& preview = run->preview();
  p.setRenderHint(QPainter::SmoothPixmapTransform, img.width() < 2 * preview.width());
  p.drawImage(img, preview);
  p.setRenderHint(QPainter::SmoothPixmapTransform, false);

  // Tokens not generated yet: MAR decodes zeros there, which is not the image.
  const auto& step_of = run->generationStep();
  if (!finished)
    for (int64_t i = 0; i < grid.imageTokens() && i < static_cast<int64_t>(step_of.size()); ++i)
      if (step_of[static_cast<size_t>(i)] < 0)
        p.fillRect(QRectF(img.left() + (i % grid.width) * cell, img.top() + (i / grid.width) * cell, cell, cell),
                   QColor(16, 18, 24, 215));

  if ((overlays_ & kOverlayAttention) && unit && unit->attention) {
    p.drawImage(img, attentionHeatmap(*unit->attention, grid, attention_alpha_));
    if (grid.condition_tokens > 0) {
      const int n = static_cast<int>(grid.condition_tokens);
      const QRect strip(img.left() - kStripGap - kStripWidth, img.top(), kStripWidth,
                        static_cast<int>(std::min(img.height() / std::max(1, n), 14) * n));
      p.drawImage(strip, attentionConditionStrip(*unit->attention, grid));
      p.setPen(QColor(200, 204, 214));
      p.drawRect(strip.adjusted(0, 0, -1, -1));
    }
  }
  // LazyMAR's token cache at this step: reused tokens hatched (their features
  // came from the cache), recomputed ones left clear.
  int64_t reused = 0;
  if ((overlays_ & kOverlayRetained) && unit && !finished) {
    for (int64_t i = 0; i < grid.imageTokens() && i < static_cast<int64_t>(unit->recomputed.size()); ++i) {
      if (unit->recomputed[static_cast<size_t>(i)]) continue;
      ++reused;
      const QRectF r(img.left() + (i % grid.width) * cell, img.top() + (i / grid.width) * cell, cell, cell);
      p.fillRect(r, QColor(10, 14, 30, 90));
      if (cell >= 5)
        p.fillRect(r, QBrush(QColor(kReusedHatch.red(), kReusedHatch.green(), kReusedHatch.blue(), 150),
                             Qt::BDiagPattern));
    }
  }
  if (unit && !finished) {
    p.setPen(QPen(kPredictedNow, cell >= 8 ? 2 : 1));
    for (int32_t q : unit->predicted_positions)
      p.drawRect(QRectF(img.left() + (q % grid.width) * cell, img.top() + (q / grid.width) * cell, cell, cell)
                     .adjusted(1, 1, -1, -1));
  }
  if (overlays_ & kOverlayGrid && cell >= 6) {
    p.setPen(QColor(255, 255, 255, 28));
    for (int64_t i = 1; i < grid.width; ++i)
      p.drawLine(QPointF(img.left() + i * cell, img.top()), QPointF(img.left() + i * cell, img.bottom()));
    for (int64_t i = 1; i < grid.height; ++i)
      p.drawLine(QPointF(img.left(), img.top() + i * cell), QPointF(img.right(), img.top() + i * cell));
  }
  p.setPen(QColor(70, 75, 88));
  p.drawRect(img.adjusted(0, 0, -1, -1));

  if (compact_ || !(overlays_ & (kOverlayAttention | kOverlayRetained | kOverlayRegions))) return;
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  int x = std::max(kMargin, img.left() - (overlays_ & kOverlayAttention ? kStripWidth + kStripGap : 0));
  int y = img.bottom() + 14;
  if ((overlays_ & kOverlayAttention) && unit && unit->attention) {
    p.drawImage(QRect(x, y, 90, kSwatch), colormapBar(90, 1));
    x += 96;
    legendText(p, x, y, tr("attention of the new tokens (strip: class buffer)"));
  }
  drawSwatch(p, QRect(x, y, kSwatch, kSwatch), QColor(0, 0, 0, 0), kPredictedNow);
  x += kSwatch + 5;
  legendText(p, x, y, tr("predicted now"));
  drawSwatch(p, QRect(x, y, kSwatch, kSwatch), QColor(16, 18, 24));
  x += kSwatch + 5;
  legendText(p, x, y, tr("not generated yet"));
  y += kSwatch + 8;
  x = std::max(kMargin, img.left() - (overlays_ & kOverlayAttention ? kStripWidth + kStripGap : 0));
  if (overlays_ & kOverlayRetained) {
    p.fillRect(QRect(x, y, kSwatch, kSwatch), QColor(10, 14, 30, 140));
    p.fillRect(QRect(x, y, kSwatch, kSwatch), QBrush(kReusedHatch, Qt::BDiagPattern));
    x += kSwatch + 5;
    const bool uncond = !unit || unit->unconditional_computed;
    legendText(
        p, x, y,
        finished
            ? tr("token cache: shown while generating")
            : tr("features reused from LazyMAR's token cache (%1 of %2 tokens); clear: recomputed · uncond. branch %3")
                  .arg(reused)
                  .arg(grid.imageTokens())
                  .arg(uncond ? tr("computed") : tr("from the condition cache")));
  }
}

}  // namespace kvs::ui
