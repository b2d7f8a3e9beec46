#pragma once
// KV-cache memory of a run as a gauge: retained now against the full-cache
// equivalent, with the peak (FLOPs, full against lazy, for a family that counts compute).
#include <QPointer>
#include <QWidget>

namespace kvs::ui {

class RunViewModel;

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

}  // namespace kvs::ui
