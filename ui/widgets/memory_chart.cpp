#include "ui/widgets/memory_chart.h"

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

MemoryChart::MemoryChart(QWidget* parent) : QWidget(parent) {}

void MemoryChart::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  connectRepaint(this, run);
  update();
}

void MemoryChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), kBackground);
  const QFontMetrics fm = fontMetrics();
  const QRectF plot(fm.horizontalAdvance(QStringLiteral("00.0 MiB")) + 8, fm.height() + 6,
                    width() - fm.horizontalAdvance(QStringLiteral("00.0 MiB")) - 16, height() - 2 * fm.height() - 12);
  const auto memory = run_ ? run_->memory() : std::vector<MemorySample>{};
  if (memory.empty()) {
    p.setPen(QColor(150, 155, 168));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               run_ && showsFlops(*run_) ? tr("FLOPs per %1 appear here during a run").arg(unitNoun(run_->family()))
                                         : tr("KV bytes per %1, against the full cache, appear here during a run")
                                               .arg(run_ ? unitNoun(run_->family()) : tr("unit")));
    return;
  }
  if (showsFlops(*run_)) {
    paintFlopsPerStep(p, plot, memory);
    return;
  }
  const int64_t units_total = run_ && run_->started().units_total > 0 ? run_->started().units_total : 16;
  double y_max = 1;
  for (const auto& s : memory)
    y_max = std::max({y_max, static_cast<double>(s.kv_bytes_full), static_cast<double>(s.kv_bytes_peak)});
  if (!memory.empty() && memory.back().unit + 1 < units_total)
    y_max = std::max(y_max, projectedFullBytes(memory.back()));
  y_max *= 1.05;
  auto X = [&](double unit) { return plot.left() + plot.width() * (unit + 1) / static_cast<double>(units_total); };
  auto Y = [&](double bytes) { return plot.bottom() - plot.height() * bytes / y_max; };

  // Axes and grid.
  drawValueGrid(p, plot, y_max, 1048576.0, fm);
  p.setPen(QColor(150, 155, 168));
  p.drawText(QRectF(plot.left(), plot.bottom() + 2, plot.width(), fm.height()), Qt::AlignCenter,
             tr("%1  (MiB)").arg(unitNoun(run_->family())));
  // Legend.
  p.setPen(QPen(kFull, 2, Qt::DashLine));
  p.drawLine(QPointF(plot.left(), 4 + fm.height() / 2.0), QPointF(plot.left() + 18, 4 + fm.height() / 2.0));
  p.setPen(kText);
  p.drawText(QPointF(plot.left() + 22, 2 + fm.ascent()), tr("full cache"));
  const double lx = plot.left() + 34 + fm.horizontalAdvance(tr("full cache"));
  p.setPen(QPen(kRetained, 2));
  p.drawLine(QPointF(lx, 4 + fm.height() / 2.0), QPointF(lx + 18, 4 + fm.height() / 2.0));
  p.setPen(kText);
  p.drawText(QPointF(lx + 22, 2 + fm.ascent()), tr("retained"));
  QPainterPath full, kept, area;
  area.moveTo(X(-1), Y(0));
  for (size_t i = 0; i < memory.size(); ++i) {
    const auto& s = memory[i];
    const QPointF pf(X(static_cast<double>(s.unit)), Y(static_cast<double>(s.kv_bytes_full)));
    const QPointF pk(X(static_cast<double>(s.unit)), Y(static_cast<double>(s.kv_bytes_logical)));
    if (i == 0) {
      full.moveTo(X(-1), Y(0));
      kept.moveTo(X(-1), Y(0));
    }
    full.lineTo(pf);
    kept.lineTo(pk);
    area.lineTo(pk);
  }
  area.lineTo(X(static_cast<double>(memory.back().unit)), Y(0));
  area.closeSubpath();
  p.fillPath(area, QColor(kRetained.red(), kRetained.green(), kRetained.blue(), 50));
  p.setPen(QPen(kFull, 2, Qt::DashLine));
  p.drawPath(full);
  p.setPen(QPen(kRetained, 2.2));
  p.drawPath(kept);

  // Policy changes: a vertical marker where the new policy takes over.
  for (const PolicyMarker& m : run_->policyMarkers()) {
    const double x = X(static_cast<double>(m.unit));
    const QColor c = m.accepted ? QColor(255, 214, 64) : QColor(235, 80, 80);
    p.setPen(QPen(c, 1.5, Qt::DashLine));
    p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    p.setPen(c);
    const QString label = m.accepted ? QStringLiteral("→ ") + shortPolicy(m.policy) : tr("refused");
    const double w = fm.horizontalAdvance(label);
    const double tx = x + 4 + w > plot.right() ? x - 4 - w : x + 4;
    p.drawText(QPointF(tx, plot.top() + fm.ascent() + 2), label);
  }
}

void MemoryChart::paintFlopsPerStep(QPainter& p, const QRectF& plot, const std::vector<MemorySample>& memory) {
  const QFontMetrics fm = fontMetrics();
  const int64_t steps = std::max<int64_t>(1, run_->unitsTotal());
  double y_max = 1;
  for (const auto& s : memory) y_max = std::max(y_max, s.flops);
  y_max *= 1.08;
  const double slot = plot.width() / static_cast<double>(steps);
  p.setPen(QPen(QColor(60, 64, 76), 1));
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4.0, y = plot.bottom() - plot.height() * i / 4.0;
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.save();
    p.setPen(QColor(150, 155, 168));
    p.drawText(QRectF(0, y - fm.height() / 2.0, plot.left() - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(v / 1e9, 'f', v / 1e9 >= 10 ? 0 : 2));
    p.restore();
  }
  for (const auto& s : memory) {
    const double h = plot.height() * s.flops / y_max;
    // Refresh steps (every token, both CFG branches; with head_cache=on the diffusion
    // head still reuses its caches) in grey, lazy steps in teal.
    const bool lazy = s.recomputed_tokens >= 0 &&
                      (s.recomputed_tokens < run_->started().grid_height * run_->started().grid_width ||
                       !s.unconditional_computed);
    p.fillRect(QRectF(plot.left() + s.unit * slot + slot * 0.1, plot.bottom() - h, std::max(1.0, slot * 0.8), h),
               lazy ? kRetained : kFull);
  }
  p.setPen(QColor(150, 155, 168));
  p.drawText(QRectF(plot.left(), plot.bottom() + 2, plot.width(), fm.height()), Qt::AlignCenter,
             tr("step  (GFLOP per image)"));
  p.fillRect(QRectF(plot.left(), 4, 12, fm.height() - 4), kFull);
  p.setPen(kText);
  p.drawText(QPointF(plot.left() + 16, 2 + fm.ascent()), tr("refresh step"));
  const double lx = plot.left() + 30 + fm.horizontalAdvance(tr("refresh step"));
  p.fillRect(QRectF(lx, 4, 12, fm.height() - 4), kRetained);
  p.drawText(QPointF(lx + 16, 2 + fm.ascent()), tr("lazy step (caches reused)"));
}

}  // namespace kvs::ui
