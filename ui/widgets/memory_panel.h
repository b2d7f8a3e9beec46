#pragma once
// KV-cache memory of a run: a gauge (retained now vs the full-cache equivalent,
// with the peak), a time series over the lines with the full-cache curve and
// policy-change markers, per-layer retained counts as bars, and process memory.
#include <QPointer>
#include <QWidget>

class QLabel;

namespace kvs::ui {

class RunViewModel;

class MemoryGauge : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryGauge(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  void setCompact(bool compact) { compact_ = compact; updateGeometry(); }
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

}  // namespace kvs::ui
