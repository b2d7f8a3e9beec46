#include "ui/widgets/device_memory_chart.h"

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

std::vector<MemorySeries> deviceMemorySeries(const std::vector<MemorySample>& memory) {
  MemorySeries allocated{QStringLiteral("allocated"), QColor(90, 160, 255), false, {}};
  MemorySeries reserved{QStringLiteral("reserved"), QColor(175, 125, 255), false, {}};
  MemorySeries peak{QStringLiteral("peak"), kPeak, false, {}};
  MemorySeries total{QStringLiteral("total"), kFull, true, {}};
  MemorySeries kv{QStringLiteral("KV cache"), kRetained, false, {}};
  for (const MemorySample& s : memory) {
    if (s.device_allocated_bytes < 0) continue;
    const double x = static_cast<double>(s.unit);
    allocated.points.push_back({x, static_cast<double>(s.device_allocated_bytes)});
    reserved.points.push_back({x, static_cast<double>(s.device_reserved_bytes)});
    peak.points.push_back({x, static_cast<double>(s.device_peak_bytes)});
    total.points.push_back({x, static_cast<double>(s.device_total_bytes)});
    kv.points.push_back({x, static_cast<double>(s.kv_bytes_allocated)});
  }
  if (allocated.points.isEmpty()) return {};
  return {allocated, reserved, peak, total, kv};
}

DeviceMemoryChart::DeviceMemoryChart(QWidget* parent) : QWidget(parent) {
  setToolTip(
      tr("GPU memory after each unit: allocated = live tensors (weights, KV cache, activations), peak = "
         "their peak in this run, reserved = what the caching allocator holds from the driver, total = "
         "the device's memory (dashed; noted at the top when it is far above the rest); teal: the KV "
         "cache's allocation"));
}

void DeviceMemoryChart::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  connectRepaint(this, run);
  update();
}

std::vector<MemorySeries> DeviceMemoryChart::series() const {
  return run_ ? deviceMemorySeries(run_->memory()) : std::vector<MemorySeries>{};
}

void DeviceMemoryChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), kBackground);
  const std::vector<MemorySeries> all = series();
  if (all.empty()) {
    p.setPen(QColor(150, 155, 168));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("GPU memory appears here during a run on a GPU"));
    return;
  }
  const QFontMetrics fm = fontMetrics();
  // The scale: everything but the device's total, which joins it only when it is
  // within reach (else a chart of an 80 GiB device would flatten the rest).
  double y_max = 1, total = 0, last_unit = 0;
  for (const MemorySeries& s : all)
    for (const QPointF& pt : s.points) {
      last_unit = std::max(last_unit, pt.x());
      if (s.dashed) total = std::max(total, pt.y());
      else y_max = std::max(y_max, pt.y());
    }
  const bool total_on_scale = total > 0 && total <= y_max * 1.6;
  if (total_on_scale) y_max = total;
  y_max *= 1.08;
  const bool gib = y_max >= 1024.0 * 1048576.0;
  const double div = gib ? 1024.0 * 1048576.0 : 1048576.0;
  // Legend rows above the plot.
  QVector<QPair<const MemorySeries*, QString>> legend;
  for (const MemorySeries& s : all) {
    QString label = s.name;
    if (s.dashed && !total_on_scale)
      label += QStringLiteral(" %1 (off scale)").arg(formatBytes(static_cast<int64_t>(total)));
    legend.push_back({&s, label});
  }
  double lx = 6, ly = 4;
  const double row_height = fm.height() + 2;
  for (const auto& [s, label] : legend) {
    const double w = 22 + fm.horizontalAdvance(label) + 10;
    if (lx + w > width() - 4 && lx > 6) {
      lx = 6;
      ly += row_height;
    }
    p.setPen(QPen(s->color, 2, s->dashed ? Qt::DashLine : Qt::SolidLine));
    p.drawLine(QPointF(lx, ly + fm.height() / 2.0), QPointF(lx + 16, ly + fm.height() / 2.0));
    p.setPen(kText);
    p.drawText(QPointF(lx + 20, ly + fm.ascent()), label);
    lx += w;
  }
  const double axis = fm.horizontalAdvance(QStringLiteral("000.0")) + 8;
  const QRectF plot(axis, ly + row_height + 4, width() - axis - 10, height() - (ly + row_height + 4) - fm.height() - 6);
  if (plot.height() < 10 || plot.width() < 10) return;
  const double units_total = std::max(last_unit + 1, static_cast<double>(run_->started().units_total));
  auto X = [&](double unit) { return plot.left() + plot.width() * (unit + 1) / std::max(1.0, units_total); };
  auto Y = [&](double bytes) { return plot.bottom() - plot.height() * bytes / y_max; };
  drawValueGrid(p, plot, y_max, div, fm);
  p.setPen(QColor(150, 155, 168));
  p.drawText(QRectF(plot.left(), plot.bottom() + 2, plot.width(), fm.height()), Qt::AlignCenter,
             tr("%1  (%2, GPU)").arg(run_ ? unitNoun(run_->family()) : tr("unit"), gib ? tr("GiB") : tr("MiB")));
  for (const MemorySeries& s : all) {
    if (s.dashed && !total_on_scale) continue;
    QPainterPath path;
    for (int i = 0; i < s.points.size(); ++i) {
      const QPointF pt(X(s.points[i].x()), Y(s.points[i].y()));
      if (i == 0) path.moveTo(pt);
      else path.lineTo(pt);
    }
    p.setPen(QPen(s.color, 2, s.dashed ? Qt::DashLine : Qt::SolidLine));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    if (s.points.size() == 1) {  // one unit so far: a dot
      p.setBrush(s.color);
      p.drawEllipse(QPointF(X(s.points[0].x()), Y(s.points[0].y())), 2.5, 2.5);
    }
  }
}

}  // namespace kvs::ui
