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
#include <QPointer>
#include <QString>
#include <QWidget>

#include <cstdint>

#include "ui/widgets/device_memory_chart.h"
#include "ui/widgets/layer_bars.h"
#include "ui/widgets/memory_chart.h"
#include "ui/widgets/memory_gauge.h"

class QLabel;

namespace kvs::ui {

class RunViewModel;

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

// "1.25 MiB", "3.10 GFLOP": how the memory widgets print sizes and compute.
QString formatBytes(int64_t bytes);
QString formatFlops(double flops);

}  // namespace kvs::ui
