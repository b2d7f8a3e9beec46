#include "ui/widgets/small_multiples_view.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

#include "ui/render/overlay_images.h"
#include "ui/viewmodel/run_view_model.h"

namespace kvs::ui {

SmallMultiplesView::SmallMultiplesView(QWidget* parent) : QWidget(parent) {
  setToolTip(tr("Retained tokens of every layer (rows) and KV head (columns): light = still cached, dark red = evicted. "
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
  for (int64_t h = 0; h < l.heads; ++h)
    p.drawText(QRectF(l.left + h * (l.tile + l.gap), 0, l.tile, l.top - 2), Qt::AlignCenter, QStringLiteral("H%1").arg(h));
  for (int64_t layer = 0; layer < l.layers; ++layer) {
    const double y = l.top + layer * (l.tile + l.gap);
    p.setPen(QColor(150, 155, 168));
    p.drawText(QRectF(0, y, l.left - 4, l.tile), Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("L%1").arg(layer));
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

void SmallMultiplesView::mousePressEvent(QMouseEvent* event) {
  const Layout l = layout();
  if (l.layers == 0) return;
  const QPointF pos = event->position();
  const int64_t h = static_cast<int64_t>((pos.x() - l.left) / (l.tile + l.gap));
  const int64_t layer = static_cast<int64_t>((pos.y() - l.top) / (l.tile + l.gap));
  if (pos.x() < l.left || pos.y() < l.top || h < 0 || h >= l.heads || layer < 0 || layer >= l.layers) return;
  Q_EMIT tileClicked(layer, h);
}

}  // namespace kvs::ui
