#pragma once
// KV-cache memory of a run over its units (lines, scales) with the full-cache
// curve and policy-change markers; FLOPs per step for a family that counts compute.
#include <QPointer>
#include <QWidget>

#include <vector>

class QPainter;
class QRectF;

namespace kvs::ui {

class RunViewModel;
struct MemorySample;

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

}  // namespace kvs::ui
