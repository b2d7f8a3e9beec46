#pragma once
// Layout constants and the legend swatch shared by the canvas's per-family painters.
#include <QColor>
#include <QPainter>
#include <QRect>

namespace kvs::ui {

constexpr int kStripWidth = 18, kStripGap = 10, kLegendHeight = 46, kMargin = 12, kScalePanelWidth = 230, kSwatch = 12;

inline void drawSwatch(QPainter& p, const QRect& r, const QColor& fill, const QColor& outline = QColor()) {
  p.fillRect(r, fill);
  if (outline.isValid()) {
    p.setPen(QPen(outline, 2));
    p.drawRect(r.adjusted(1, 1, -1, -1));
  }
}

}  // namespace kvs::ui
