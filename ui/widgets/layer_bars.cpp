#include "ui/widgets/layer_bars.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>
#include <cmath>

#include "ui/viewmodel/model_family.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/axis_labels.h"
#include "ui/widgets/memory_panel.h"
#include "ui/widgets/memory_style.h"

namespace kvs::ui {

using namespace memory_style;

LayerBars::LayerBars(QWidget* parent) : QWidget(parent) {}

void LayerBars::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  connectRepaint(this, run);
  update();
}

void LayerBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), kBackground);
  const auto& unit = run_ ? run_->lastUnit() : UnitDonePtr();
  const QFontMetrics fm = fontMetrics();
  if (run_ && unit && !run_->family().measures_kv_bytes) {
    if (run_->family().overlays.recomputed_tokens) paintRecomputedPerStep(p);
    return;
  }
  if (!unit || unit->retained_per_layer.empty()) {
    p.setPen(QColor(150, 155, 168));
    p.drawText(rect(), Qt::AlignCenter, tr("retained tokens per layer"));
    return;
  }
  const auto& counts = unit->retained_per_layer;
  const double full = std::max<double>(1.0, static_cast<double>(unit->full_entries_per_layer));
  double top = full;
  for (int64_t c : counts) top = std::max(top, static_cast<double>(c));
  const auto& evicted = run_->evictionsLastUnit();
  const int n = static_cast<int>(counts.size());
  const double axis = fm.horizontalAdvance(QStringLiteral("00000")) + 6;
  const QRectF plot(axis, fm.height() + 4, width() - axis - 6, height() - fm.height() * 2 - 10);
  p.setPen(kText);
  p.drawText(QRectF(4, 0, width() - 8, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
             tr("retained per layer (image 0, all KV heads)"));
  const double slot = plot.width() / std::max(1, n);
  const int label_every = labelStride(slot, fm.horizontalAdvance(QStringLiteral("L%1").arg(std::max(0, n - 1))));
  for (int l = 0; l < n; ++l) {
    const double x = plot.left() + l * slot + slot * 0.15, w = slot * 0.7;
    const double hf = plot.height() * full / top, hk = plot.height() * counts[static_cast<size_t>(l)] / top;
    p.fillRect(QRectF(x, plot.bottom() - hf, w, hf), QColor(kFull.red(), kFull.green(), kFull.blue(), 60));
    p.fillRect(QRectF(x, plot.bottom() - hk, w, hk), kRetained);
    p.setPen(QColor(150, 155, 168));
    if (l % label_every == 0)
      p.drawText(QRectF(plot.left() + l * slot - slot * (label_every - 1) / 2.0, plot.bottom() + 2, slot * label_every,
                        fm.height()),
                 Qt::AlignCenter, QStringLiteral("L%1").arg(l));
    if (l < static_cast<int>(evicted.size()) && evicted[static_cast<size_t>(l)] > 0 && w > 18) {
      p.setPen(QColor(255, 140, 140));
      p.drawText(QRectF(x - 6, plot.bottom() - hk - fm.height() - 1, w + 12, fm.height()), Qt::AlignCenter,
                 QStringLiteral("−%1").arg(evicted[static_cast<size_t>(l)]));
    }
  }
  p.setPen(QColor(150, 155, 168));
  p.drawText(QRectF(0, plot.top() - 2, axis - 4, fm.height()), Qt::AlignRight,
             QString::number(static_cast<qint64>(top)));
}

void LayerBars::paintRecomputedPerStep(QPainter& p) {
  const QFontMetrics fm = fontMetrics();
  const auto& memory = run_->memory();
  const int64_t tokens = std::max<int64_t>(1, run_->started().grid_height * run_->started().grid_width);
  const int64_t steps = std::max<int64_t>(1, run_->unitsTotal());
  p.setPen(kText);
  p.drawText(QRectF(4, 0, width() - 8, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
             tr("tokens recomputed per step (of %1; the rest reused)").arg(tokens));
  const QRectF plot(6, fm.height() + 4, width() - 12, height() - fm.height() - 10);
  const double slot = plot.width() / static_cast<double>(steps);
  p.fillRect(plot, QColor(kFull.red(), kFull.green(), kFull.blue(), 30));
  for (const auto& s : memory) {
    if (s.recomputed_tokens < 0) continue;
    const double h = plot.height() * static_cast<double>(s.recomputed_tokens) / static_cast<double>(tokens);
    p.fillRect(QRectF(plot.left() + s.unit * slot + slot * 0.1, plot.bottom() - h, std::max(1.0, slot * 0.8), h),
               QColor(255, 170, 60));
  }
}

}  // namespace kvs::ui
