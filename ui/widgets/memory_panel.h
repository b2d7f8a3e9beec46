#pragma once
// KV-cache memory of a run: a gauge (retained now vs the full-cache equivalent,
// with the peak), a time series over the units (lines, scales) with the
// full-cache curve and policy-change markers, per-layer retained counts as bars,
// and process memory, as the unit events report them. A family that measures
// no KV bytes but FLOPs (FamilyDescription; MAR: LazyMAR's feature caches save
// compute) gets the FLOPs of each unit (full vs lazy) and, with recomputed
// tokens among its overlays, the tokens recomputed per unit instead. A run on a
// GPU adds a chart of the device's memory (allocated, reserved, peak, total)
// beside the KV cache's allocation; CPU runs do not show it.
#include <QColor>
#include <QPointF>
#include <QPointer>
#include <QString>
#include <QVector>
#include <QWidget>

#include <vector>

class QLabel;
class QPainter;
class QRectF;

namespace kvs::ui {

class RunViewModel;
struct MemorySample;

class MemoryGauge : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryGauge(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  void setCompact(bool compact) {
    compact_ = compact;
    updateGeometry();
  }
  QSize sizeHint() const override { return {280, compact_ ? 26 : 46}; }
  QSize minimumSizeHint() const override { return {120, compact_ ? 22 : 40}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QPointer<RunViewModel> run_;
  bool compact_ = false;
};

class MemoryChart : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  QSize sizeHint() const override { return {280, 170}; }
  QSize minimumSizeHint() const override { return {160, 110}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  void paintFlopsPerStep(QPainter& p, const QRectF& plot, const std::vector<MemorySample>& memory);
  QPointer<RunViewModel> run_;
};

// One line of a chart: (unit index, bytes) points.
struct MemorySeries {
  QString name;
  QColor color;
  bool dashed = false;
  QVector<QPointF> points;
};

// GPU runs: the device's memory after each unit as series named "allocated",
// "reserved", "peak" and "total" (LibTorch's caching allocator; total is the
// device's memory), and "KV cache" (the store's allocated bytes) beside them.
// Units without device numbers are skipped; empty when no unit has any (CPU runs).
std::vector<MemorySeries> deviceMemorySeries(const std::vector<MemorySample>& memory);

class DeviceMemoryChart : public QWidget {
  Q_OBJECT
 public:
  explicit DeviceMemoryChart(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  // What the chart draws now (deviceMemorySeries of the run's samples).
  std::vector<MemorySeries> series() const;
  QSize sizeHint() const override { return {280, 150}; }
  QSize minimumSizeHint() const override { return {160, 100}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QPointer<RunViewModel> run_;
};

class LayerBars : public QWidget {
  Q_OBJECT
 public:
  explicit LayerBars(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  QSize sizeHint() const override { return {280, 120}; }
  QSize minimumSizeHint() const override { return {160, 70}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  void paintRecomputedPerStep(QPainter& p);
  QPointer<RunViewModel> run_;
};

class MemoryPanel : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryPanel(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);

 private:
  void refreshText();

  QPointer<RunViewModel> run_;
  MemoryGauge* gauge_;
  MemoryChart* chart_;
  DeviceMemoryChart* device_chart_;
  LayerBars* bars_;
  QLabel* process_;
};

QString formatBytes(int64_t bytes);
QString formatFlops(double flops);

}  // namespace kvs::ui
