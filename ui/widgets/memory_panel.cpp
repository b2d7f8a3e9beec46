#include "ui/widgets/memory_panel.h"

#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "ui/viewmodel/model_family.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/axis_labels.h"

namespace kvs::ui {
namespace {

const QColor kRetained(64, 200, 180);
const QColor kFull(150, 156, 170);
const QColor kPeak(255, 170, 60);
const QColor kBackground(30, 33, 40);
const QColor kText(205, 209, 219);

void connectRepaint(QWidget* w, RunViewModel* run) {
  if (!run) return;
  QObject::connect(run, &RunViewModel::unitChanged, w, qOverload<>(&QWidget::update));
  QObject::connect(run, &RunViewModel::policyMarkersChanged, w, qOverload<>(&QWidget::update));
  QObject::connect(run, &RunViewModel::stateChanged, w, qOverload<>(&QWidget::update));
}

// The full cache at the end of the run, as the engine states it with every unit.
double projectedFullBytes(const MemorySample& m) {
  return static_cast<double>(std::max(m.kv_bytes_full_final, m.kv_bytes_full));
}

// Families without a KV cache that count their FLOPs show compute instead of bytes.
bool showsFlops(const RunViewModel& run) { return !run.family().measures_kv_bytes && run.family().measures_flops; }

QString shortPolicy(const QString& spec) { return spec.size() > 22 ? spec.left(20) + QStringLiteral("…") : spec; }

}  // namespace

QString formatFlops(double flops) {
  if (flops >= 1e12) return QStringLiteral("%1 TFLOP").arg(flops / 1e12, 0, 'f', 2);
  if (flops >= 1e9) return QStringLiteral("%1 GFLOP").arg(flops / 1e9, 0, 'f', 2);
  if (flops >= 1e6) return QStringLiteral("%1 MFLOP").arg(flops / 1e6, 0, 'f', 1);
  return QStringLiteral("%1 FLOP").arg(flops, 0, 'f', 0);
}

QString formatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return QStringLiteral("%1 GiB").arg(b / (1024.0 * 1024 * 1024), 0, 'f', 2);
  if (b >= 1024.0 * 1024) return QStringLiteral("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 2);
  if (b >= 1024.0) return QStringLiteral("%1 KiB").arg(b / 1024.0, 0, 'f', 1);
  return QStringLiteral("%1 B").arg(bytes);
}

// ---------------------------------------------------------------- gauge
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

// ---------------------------------------------------------------- chart
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
  p.setPen(QPen(QColor(60, 64, 76), 1));
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4.0;
    const double y = Y(v);
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.save();
    p.setPen(QColor(150, 155, 168));
    p.drawText(QRectF(0, y - fm.height() / 2.0, plot.left() - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("%1").arg(v / 1048576.0, 0, 'f', v / 1048576.0 >= 10 ? 0 : 1));
    p.restore();
  }
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

// ---------------------------------------------------------------- device memory (GPU runs)
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
  p.setPen(QPen(QColor(60, 64, 76), 1));
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4.0;
    const double y = Y(v);
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.save();
    p.setPen(QColor(150, 155, 168));
    p.drawText(QRectF(0, y - fm.height() / 2.0, plot.left() - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(v / div, 'f', v / div >= 10 ? 0 : 1));
    p.restore();
  }
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

// ---------------------------------------------------------------- per-layer bars
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

// ---------------------------------------------------------------- panel
MemoryPanel::MemoryPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(6);
  gauge_ = new MemoryGauge(this);
  chart_ = new MemoryChart(this);
  device_chart_ = new DeviceMemoryChart(this);
  device_chart_->setObjectName(QStringLiteral("deviceMemoryChart"));
  device_chart_->setVisible(false);  // shown once a unit reports device memory (GPU runs)
  bars_ = new LayerBars(this);
  process_ = new QLabel(this);
  process_->setTextFormat(Qt::RichText);
  layout->addWidget(gauge_);
  layout->addWidget(chart_, 3);
  layout->addWidget(device_chart_, 3);
  layout->addWidget(bars_, 2);
  layout->addWidget(process_);
  refreshText();
}

void MemoryPanel::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  gauge_->setRun(run);
  chart_->setRun(run);
  device_chart_->setRun(run);
  bars_->setRun(run);
  if (run) {
    connect(run, &RunViewModel::unitChanged, this, &MemoryPanel::refreshText);
    connect(run, &RunViewModel::stateChanged, this, &MemoryPanel::refreshText);
  }
  refreshText();
}

void MemoryPanel::refreshText() {
  const QString unit = run_ ? unitNoun(run_->family()) : tr("unit");
  if (run_ && showsFlops(*run_)) {
    gauge_->setToolTip(tr("FLOPs of the latest %1 (per image) and their share of the largest %1 so far (a full "
                          "computation); right: the run's total")
                           .arg(unit));
    chart_->setToolTip(
        tr("FLOPs per %1: grey = every token and both CFG branches computed, teal = cached features reused").arg(unit));
    bars_->setToolTip(
        tr("Grid tokens whose features each %1 recomputed; the others came from the token cache").arg(unit));
  } else {
    gauge_->setToolTip(
        tr("KV bytes retained now (teal) vs what the uncompressed cache would hold (grey); orange: peak allocated"));
    chart_->setToolTip(tr("KV bytes over the run; dashed: the full cache; yellow markers: policy changes (they apply "
                          "from the next %1)")
                           .arg(unit));
    bars_->setToolTip(
        tr("Entries retained per layer for image 0 (grey: what the full cache holds); red: evicted during the last %1")
            .arg(unit));
  }
  // The process's memory as the engine reported it with the latest unit.
  const MemorySample* last = run_ && !run_->memory().empty() ? &run_->memory().back() : nullptr;
  QString device = run_ ? QString::fromStdString(run_->started().device) : QString();
  const QString deviceText =
      device.isEmpty() ? QString()
                       : QStringLiteral(" · <span style='color:#9aa0ad'>%1</span>").arg(device.toHtmlEscaped());
  QString text;
  if (last && last->process_bytes >= 0) {
    text = tr("<span style='color:#9aa0ad'>process</span> %1 <span style='color:#9aa0ad'>(peak %2)</span>%3")
               .arg(formatBytes(last->process_bytes),
                    last->process_peak_bytes >= 0 ? formatBytes(last->process_peak_bytes) : QStringLiteral("—"),
                    deviceText);
  } else {
    text = tr("<span style='color:#9aa0ad'>process memory: reported during a run</span>%1").arg(deviceText);
  }
  // GPU runs add the device's memory (LibTorch's caching allocator); CPU runs say so.
  if (last && last->device_allocated_bytes >= 0) {
    text += tr("<br><span style='color:#9aa0ad'>GPU</span> %1 <span style='color:#9aa0ad'>(peak %2, reserved %3 of "
               "%4)</span>")
                .arg(formatBytes(last->device_allocated_bytes), formatBytes(last->device_peak_bytes),
                     formatBytes(last->device_reserved_bytes), formatBytes(last->device_total_bytes));
  } else if (last) {
    text += tr("<br><span style='color:#9aa0ad'>GPU memory: none in use (CPU run)</span>");
  }
  process_->setText(text);
  // The GPU chart while the run reports device memory; CPU runs keep the panel as it was.
  device_chart_->setVisible(last && last->device_allocated_bytes >= 0);
  process_->setToolTip(
      tr("Process: resident memory now and its peak. GPU (on CUDA runs): what live tensors hold now, "
         "their peak in this run, and what the caching allocator reserves of the device's memory."));
}

}  // namespace kvs::ui
