#pragma once
// A GPU run's device memory after each unit (allocated, reserved, peak, total)
// beside the KV cache's allocation; CPU runs do not show it.
#include <QColor>
#include <QPointF>
#include <QPointer>
#include <QString>
#include <QVector>
#include <QWidget>

#include <vector>

namespace kvs::ui {

class RunViewModel;
struct MemorySample;

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

}  // namespace kvs::ui
