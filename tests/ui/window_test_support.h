#pragma once
// What the offscreen window tests share: options for a window that starts with a
// given bundle (the demo by default), without QSettings, at one thread; and how
// much the canvas's picture varies (a blank canvas has spread 0).
#include <QImage>
#include <QString>

#include <algorithm>
#include <cmath>

#include "ui/widgets/generation_canvas.h"
#include "ui/widgets/main_window.h"

namespace kvs::ui::test {

inline MainWindowOptions windowOptions(const QString& model = QString()) {
  MainWindowOptions o;
  o.bundledDemo = QStringLiteral(KVSTUDIO_DEMO_MODEL);
  o.model = model;
  o.useSettings = false;
  o.threads = 1;
  return o;
}

// Standard deviation of the canvas image's grey levels.
inline double canvasSpread(GenerationCanvas* canvas) {
  const QImage g = canvas->grab(canvas->imageRect()).toImage().convertToFormat(QImage::Format_Grayscale8);
  double sum = 0, sum2 = 0;
  for (int y = 0; y < g.height(); ++y)
    for (int x = 0; x < g.width(); ++x) {
      const double v = g.constScanLine(y)[x];
      sum += v;
      sum2 += v * v;
    }
  const double n = static_cast<double>(g.width()) * g.height();
  return std::sqrt(std::max(0.0, sum2 / n - (sum / n) * (sum / n)));
}

}  // namespace kvs::ui::test
