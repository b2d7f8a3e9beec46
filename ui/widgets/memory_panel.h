#pragma once
// KV-cache memory of a run: a gauge (retained now vs the full-cache equivalent,
// with the peak), a time series over the units (lines, scales) with the
// full-cache curve and policy-change markers, per-layer retained counts as bars,
// and process memory, as the unit events report them. A family that measures
// no KV bytes but FLOPs (FamilyDescription; MAR: LazyMAR's feature caches save
// compute) gets the FLOPs of each unit (full vs lazy) and, with recomputed
// tokens among its overlays, the tokens recomputed per unit instead.
#include <QPointer>
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
  LayerBars* bars_;
  QLabel* process_;
};

QString formatBytes(int64_t bytes);
QString formatFlops(double flops);

}  // namespace kvs::ui
