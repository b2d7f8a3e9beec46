#include "ui/widgets/memory_gauge.h"

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

MemoryGauge::MemoryGauge(QWidget* parent) : QWidget(parent) {}

void MemoryGauge::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  connectRepaint(this, run);
  update();
}

void MemoryGauge::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const int textHeight = compact_ ? 0 : fontMetrics().height() + 4;
  const QRectF bar(1, textHeight + 1, width() - 2, height() - textHeight - 2);
  p.setPen(Qt::NoPen);
  p.setBrush(kBackground);
  p.drawRoundedRect(bar, 4, 4);
  const auto& memory = run_ ? run_->memory() : std::vector<MemorySample>{};
  if (memory.empty()) {
    p.setPen(kText);
    if (!compact_)
      p.drawText(QRectF(0, 0, width(), textHeight), Qt::AlignLeft | Qt::AlignVCenter, tr("KV cache: no run yet"));
    return;
  }
  const MemorySample& m = memory.back();
  if (showsFlops(*run_)) {
    // No growing KV cache: what a feature cache saves is compute. The bar is
    // this unit's FLOPs against the largest unit so far (a full computation).
    double step_max = 0, total = 0;
    for (const auto& s : memory) {
      step_max = std::max(step_max, s.flops);
      total += s.flops;
    }
    QRectF used = bar;
    used.setWidth(step_max > 0 ? bar.width() * m.flops / step_max : 0);
    p.setBrush(kRetained);
    p.drawRoundedRect(used, 4, 4);
    const QString label = tr("%1 %2: %3 (%4%)")
                              .arg(unitNoun(run_->family()))
                              .arg(m.unit + 1)
                              .arg(formatFlops(m.flops))
                              .arg(step_max > 0 ? 100.0 * m.flops / step_max : 0, 0, 'f', 0);
    const QString run_total = tr("run %1").arg(formatFlops(total));
    p.setPen(kText);
    if (compact_) {
      p.drawText(bar.adjusted(6, 0, -4, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 label + QStringLiteral(" · ") + run_total);
    } else {
      p.drawText(QRectF(0, 0, width(), textHeight), Qt::AlignLeft | Qt::AlignVCenter, label);
      p.setPen(kPeak);
      p.drawText(QRectF(0, 0, width(), textHeight), Qt::AlignRight | Qt::AlignVCenter, run_total);
    }
    return;
  }
  int64_t full_max = 0;
  for (const auto& s : memory) full_max = std::max(full_max, s.kv_bytes_full);
  // The scale is the full cache of the whole image (as the engine states it), so
  // that the bar grows as the image does.
  const double full_final = std::max({1.0, projectedFullBytes(m), static_cast<double>(full_max)});
  const double scale = bar.width() / std::max(1.0, full_final);
  QRectF full = bar;
  full.setWidth(std::min(bar.width(), m.kv_bytes_full * scale));
  p.setBrush(QColor(kFull.red(), kFull.green(), kFull.blue(), 90));
  p.drawRoundedRect(full, 4, 4);
  QRectF kept = bar;
  kept.setWidth(std::min(bar.width(), m.kv_bytes_logical * scale));
  QLinearGradient g(kept.topLeft(), kept.topRight());
  g.setColorAt(0, kRetained.darker(130));
  g.setColorAt(1, kRetained);
  p.setBrush(g);
  p.drawRoundedRect(kept, 4, 4);
  const double peak_x = bar.left() + std::min(bar.width(), m.kv_bytes_peak * scale);
  p.setPen(QPen(kPeak, 2));
  p.drawLine(QPointF(peak_x, bar.top() + 1), QPointF(peak_x, bar.bottom() - 1));
  const double share = m.kv_bytes_full > 0 ? 100.0 * m.kv_bytes_logical / m.kv_bytes_full : 0;
  const QString label = tr("KV %1 of %2 full (%3%)")
                            .arg(formatBytes(m.kv_bytes_logical), formatBytes(m.kv_bytes_full))
                            .arg(share, 0, 'f', 0);
  p.setPen(kText);
  if (compact_) {
    p.drawText(bar.adjusted(6, 0, -4, 0), Qt::AlignLeft | Qt::AlignVCenter, label);
  } else {
    p.drawText(QRectF(0, 0, width(), textHeight), Qt::AlignLeft | Qt::AlignVCenter, label);
    p.setPen(kPeak);
    p.drawText(QRectF(0, 0, width(), textHeight), Qt::AlignRight | Qt::AlignVCenter,
               tr("peak %1").arg(formatBytes(m.kv_bytes_peak)));
  }
}

}  // namespace kvs::ui
