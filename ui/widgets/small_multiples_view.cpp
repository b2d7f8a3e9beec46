#include "ui/widgets/small_multiples_view.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "ui/render/overlay_images.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/viewmodel/scale_maps.h"
#include "ui/widgets/axis_labels.h"

namespace kvs::ui {

SmallMultiplesView::SmallMultiplesView(QWidget* parent) : QWidget(parent) {
  setToolTip(
      tr("Retained tokens of every layer (rows) and KV head (columns): light = still cached, dark red = evicted. "
         "Click a tile to show it on the canvas."));
  setCursor(Qt::PointingHandCursor);
}

void SmallMultiplesView::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  if (run_) connect(run_, &RunViewModel::unitChanged, this, qOverload<>(&QWidget::update));
  update();
}

void SmallMultiplesView::setSelection(int64_t layer, int64_t head) {
  layer_ = layer;
  head_ = head;
  update();
}

SmallMultiplesView::Layout SmallMultiplesView::layout() const {
  Layout l;
  const auto& unit = run_ ? run_->lastUnit() : UnitDonePtr();
  if (!unit || !unit->retained) return l;
  if (run_->family().overlays.scale_matrix) {
    // Layers as tiles in a near-square grid; each tile heads x scales.
    l.layers = unit->retained->n_layer;
    l.heads = 0;
    const int64_t cols = std::max<int64_t>(1,
                                           static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(l.layers)))));
    const int64_t rows = (l.layers + cols - 1) / cols;
    l.top = fontMetrics().height() + 4;
    l.gap = 6;
    l.tile = std::max(8.0, std::min((width() - 8 - (cols - 1) * l.gap) / static_cast<double>(cols),
                                    (height() - 4 - rows * (l.top + l.gap)) / static_cast<double>(rows)));
    l.left = 4;
    return l;
  }
  l.layers = unit->retained->n_layer;
  l.heads = unit->retained->kv_heads;
  const QFontMetrics fm = fontMetrics();
  l.left = fm.horizontalAdvance(QStringLiteral("L00")) + 6;
  l.top = fm.height() + 4;
  const double w = (width() - l.left - 4) / static_cast<double>(std::max<int64_t>(1, l.heads));
  const double h = (height() - l.top - 4) / static_cast<double>(std::max<int64_t>(1, l.layers));
  l.gap = std::clamp(std::min(w, h) * 0.08, 1.0, 4.0);
  l.tile = std::max(4.0, std::min(w, h) - l.gap);
  return l;
}

void SmallMultiplesView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(30, 33, 40));
  const auto& unit = run_ ? run_->lastUnit() : UnitDonePtr();
  if (run_ && unit && run_->family().overlays.recomputed_tokens) {
    paintMaskedTiles(p);
    return;
  }
  if (run_ && unit && unit->retained && run_->family().overlays.scale_matrix) {
    paintScaleTiles(p);
    return;
  }
  if (!unit || !unit->retained) {
    p.setPen(QColor(150, 155, 168));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("layers × heads cache maps appear here during a run"));
    return;
  }
  const kvs::RetainedMasks& masks = *unit->retained;
  const Layout l = layout();
  TokenGrid grid;
  grid.height = run_->started().grid_height;
  grid.width = run_->started().grid_width;
  grid.condition_tokens = std::max<int64_t>(0, masks.positions - grid.imageTokens());
  grid.tokens_done = (unit->unit_index + 1) * grid.width;
  p.setPen(QColor(150, 155, 168));
  const QFontMetrics fm = fontMetrics();
  const double pitch = l.tile + l.gap;
  const int head_every = labelStride(pitch, fm.horizontalAdvance(QStringLiteral("H%1").arg(l.heads - 1)));
  const int layer_every = labelStride(pitch, fm.height());
  for (int64_t h = 0; h < l.heads; h += head_every)
    p.drawText(QRectF(l.left + h * pitch - pitch, 0, l.tile + 2 * pitch, l.top - 2), Qt::AlignCenter,
               QStringLiteral("H%1").arg(h));
  for (int64_t layer = 0; layer < l.layers; ++layer) {
    const double y = l.top + layer * pitch;
    p.setPen(QColor(150, 155, 168));
    if (layer % layer_every == 0)
      p.drawText(QRectF(0, y + l.tile / 2 - fm.height(), l.left - 4, 2 * fm.height()),
                 Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(layer));
    for (int64_t h = 0; h < l.heads; ++h) {
      const QRectF r(l.left + h * (l.tile + l.gap), y, l.tile, l.tile);
      p.drawImage(r, retainedMaskTile(masks, grid, layer, h));
      const bool selected = (layer_ < 0 || layer_ == layer) && (head_ < 0 || head_ == h) && !(layer_ < 0 && head_ < 0);
      if (selected) {
        p.setPen(QPen(QColor(255, 214, 64), 2));
        p.drawRect(r.adjusted(-1, -1, 1, 1));
      }
    }
  }
}

void SmallMultiplesView::paintScaleTiles(QPainter& p) {
  const auto& unit = run_->lastUnit();
  const kvs::RetainedMasks& masks = *unit->retained;
  const ScaleLayout& scales = run_->scaleLayout();
  const Layout l = layout();
  const int64_t cols = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(l.layers)))));
  const int64_t done = std::min(scales.scales(), unit->unit_index + 1);
  for (int64_t layer = 0; layer < l.layers; ++layer) {
    const double x = l.left + (layer % cols) * (l.tile + l.gap);
    const double y = (layer / cols) * (l.top + l.tile + l.gap);
    p.setPen(QColor(150, 155, 168));
    p.drawText(QRectF(x, y, l.tile, l.top - 2), Qt::AlignLeft | Qt::AlignBottom, QStringLiteral("L%1").arg(layer));
    const QRectF tile(x, y + l.top, l.tile, l.tile);
    p.fillRect(tile, pendingColor());
    const double cw = tile.width() / static_cast<double>(std::max<int64_t>(1, scales.scales()));
    const double ch = tile.height() / static_cast<double>(std::max<int64_t>(1, masks.kv_heads));
    for (int64_t h = 0; h < masks.kv_heads; ++h) {
      const std::vector<double> share = retainedShareByScale(masks, scales, layer, h, done);
      for (int64_t s = 0; s < scales.scales(); ++s) {
        const double v = share[static_cast<size_t>(s)];
        if (v < 0) continue;
        const QColor kept = retainedColor(), gone = evictedColor();
        const QColor c = QColor::fromRgbF(static_cast<float>(gone.redF() + (kept.redF() - gone.redF()) * v),
                                          static_cast<float>(gone.greenF() + (kept.greenF() - gone.greenF()) * v),
                                          static_cast<float>(gone.blueF() + (kept.blueF() - gone.blueF()) * v));
        p.fillRect(QRectF(tile.left() + s * cw, tile.top() + h * ch, cw + 0.5, ch + 0.5), c);
      }
    }
    if (layer_ == layer) {
      p.setPen(QPen(QColor(255, 214, 64), 2));
      p.drawRect(tile.adjusted(-1, -1, 1, 1));
    }
  }
}

void SmallMultiplesView::paintMaskedTiles(QPainter& p) {
  const auto& unit = run_->lastUnit();
  const int64_t gh = std::max<int64_t>(1, run_->started().grid_height),
                gw = std::max<int64_t>(1, run_->started().grid_width);
  const int64_t steps = std::max<int64_t>(1, run_->unitsTotal());
  const QFontMetrics fm = fontMetrics();
  const double top = fm.height() + 4;
  const double side = std::max(16.0, std::min((width() - 18) / 2.0, height() - top - 2 * fm.height() - 10));
  const QRectF order(6, top, side, side), cache(12 + side, top, side, side);
  p.setPen(QColor(150, 155, 168));
  p.drawText(QRectF(order.left(), 0, side, top - 2), Qt::AlignLeft | Qt::AlignBottom, tr("generation order"));
  p.drawText(QRectF(cache.left(), 0, side, top - 2), Qt::AlignLeft | Qt::AlignBottom,
             tr("token cache, step %1").arg(unit->unit_index + 1));
  const double cw = side / static_cast<double>(gw), ch = side / static_cast<double>(gh);
  const QImage ramp = colormapBar(256, 1);
  const auto& step_of = run_->generationStep();
  for (int64_t i = 0; i < gh * gw; ++i) {
    const QRectF cellOrder(order.left() + (i % gw) * cw, order.top() + (i / gw) * ch, cw + 0.5, ch + 0.5);
    const int32_t st = i < static_cast<int64_t>(step_of.size()) ? step_of[static_cast<size_t>(i)] : -1;
    p.fillRect(cellOrder, st < 0
                              ? pendingColor()
                              : QColor(ramp.pixel(static_cast<int>(255.0 * st / std::max<int64_t>(1, steps - 1)), 0)));
    const QRectF cellCache(cache.left() + (i % gw) * cw, cache.top() + (i / gw) * ch, cw + 0.5, ch + 0.5);
    const bool recomputed = i < static_cast<int64_t>(unit->recomputed.size()) &&
                            unit->recomputed[static_cast<size_t>(i)];
    p.fillRect(cellCache, recomputed ? QColor(255, 170, 60) : QColor(70, 110, 200));
  }
  p.setPen(QColor(150, 155, 168));
  p.drawText(QRectF(order.left(), order.bottom() + 2, side, 2 * fm.height()), Qt::AlignLeft | Qt::TextWordWrap,
             tr("dark → bright: early → late steps; black: not yet"));
  p.fillRect(QRectF(cache.left(), cache.bottom() + 5, 10, 10), QColor(255, 170, 60));
  p.drawText(QRectF(cache.left() + 14, cache.bottom() + 2, side - 14, fm.height()), Qt::AlignLeft, tr("recomputed"));
  p.fillRect(QRectF(cache.left(), cache.bottom() + 5 + fm.height(), 10, 10), QColor(70, 110, 200));
  p.drawText(QRectF(cache.left() + 14, cache.bottom() + 2 + fm.height(), side - 14, fm.height()), Qt::AlignLeft,
             tr("reused (token cache)"));
}

void SmallMultiplesView::mousePressEvent(QMouseEvent* event) {
  const Layout l = layout();
  if (l.layers == 0) return;
  const QPointF pos = event->position();
  if (run_ && run_->family().overlays.scale_matrix) {
    const int64_t cols = std::max<int64_t>(1,
                                           static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(l.layers)))));
    const int64_t c = static_cast<int64_t>((pos.x() - l.left) / (l.tile + l.gap));
    const int64_t r = static_cast<int64_t>(pos.y() / (l.top + l.tile + l.gap));
    const int64_t layer = r * cols + c;
    if (c >= 0 && c < cols && layer >= 0 && layer < l.layers) Q_EMIT tileClicked(layer, -1);
    return;
  }
  const int64_t h = static_cast<int64_t>((pos.x() - l.left) / (l.tile + l.gap));
  const int64_t layer = static_cast<int64_t>((pos.y() - l.top) / (l.tile + l.gap));
  if (pos.x() < l.left || pos.y() < l.top || h < 0 || h >= l.heads || layer < 0 || layer >= l.layers) return;
  Q_EMIT tileClicked(layer, h);
}

}  // namespace kvs::ui
