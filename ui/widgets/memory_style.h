#pragma once
// What the memory widgets share: their colours, the repaint wiring to a run,
// and how a unit's sample reads (the projected full cache; FLOPs instead of
// bytes for a family that counts compute).
#include <QColor>
#include <QFontMetrics>
#include <QObject>
#include <QPainter>
#include <QRectF>
#include <QString>
#include <QWidget>

#include <algorithm>

#include "ui/viewmodel/model_family.h"
#include "ui/viewmodel/run_view_model.h"

namespace kvs::ui::memory_style {

inline const QColor kRetained(64, 200, 180);
inline const QColor kFull(150, 156, 170);
inline const QColor kPeak(255, 170, 60);
inline const QColor kBackground(30, 33, 40);
inline const QColor kText(205, 209, 219);

inline void connectRepaint(QWidget* w, RunViewModel* run) {
  if (!run) return;
  QObject::connect(run, &RunViewModel::unitChanged, w, qOverload<>(&QWidget::update));
  QObject::connect(run, &RunViewModel::policyMarkersChanged, w, qOverload<>(&QWidget::update));
  QObject::connect(run, &RunViewModel::stateChanged, w, qOverload<>(&QWidget::update));
}

// The full cache at the end of the run, as the engine states it with every unit.
inline double projectedFullBytes(const MemorySample& m) {
  return static_cast<double>(std::max(m.kv_bytes_full_final, m.kv_bytes_full));
}

// Families without a KV cache that count their FLOPs show compute instead of bytes.
inline bool showsFlops(const RunViewModel& run) {
  return !run.family().measures_kv_bytes && run.family().measures_flops;
}

// A chart's horizontal grid: five lines from 0 to y_max over `plot`, each
// labelled left of the plot with its value divided by `divisor` (1 MiB, ...).
inline void drawValueGrid(QPainter& p, const QRectF& plot, double y_max, double divisor, const QFontMetrics& fm) {
  p.setPen(QPen(QColor(60, 64, 76), 1));
  for (int i = 0; i <= 4; ++i) {
    const double v = y_max * i / 4.0;
    const double y = plot.bottom() - plot.height() * v / y_max;
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
    p.save();
    p.setPen(QColor(150, 155, 168));
    p.drawText(QRectF(0, y - fm.height() / 2.0, plot.left() - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
               QString::number(v / divisor, 'f', v / divisor >= 10 ? 0 : 1));
    p.restore();
  }
}

inline QString shortPolicy(const QString& spec) {
  return spec.size() > 22 ? spec.left(20) + QStringLiteral("…") : spec;
}

}  // namespace kvs::ui::memory_style
