#include "ui/widgets/memory_panel.h"

#include <QLabel>
#include <QVBoxLayout>

#include "ui/viewmodel/model_family.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/memory_style.h"

namespace kvs::ui {

using namespace memory_style;

QString formatFlops(double flops) {
  if (flops >= 1e12) return QStringLiteral("%1 TFLOP").arg(flops / 1e12, 0, 'f', 2);
  if (flops >= 1e9) return QStringLiteral("%1 GFLOP").arg(flops / 1e9, 0, 'f', 2);
  if (flops >= 1e6) return QStringLiteral("%1 MFLOP").arg(flops / 1e6, 0, 'f', 1);
  return QStringLiteral("%1 FLOP").arg(flops, 0, 'f', 0);
}

QString formatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return QStringLiteral("%1 GiB").arg(b / (1024.0 * 1024 * 1024), 0, 'f', 2);
  if (b >= 1024.0 * 1024) return QStringLiteral("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 2);
  if (b >= 1024.0) return QStringLiteral("%1 KiB").arg(b / 1024.0, 0, 'f', 1);
  return QStringLiteral("%1 B").arg(bytes);
}

MemoryPanel::MemoryPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->setSpacing(6);
  gauge_ = new MemoryGauge(this);
  chart_ = new MemoryChart(this);
  device_chart_ = new DeviceMemoryChart(this);
  device_chart_->setObjectName(QStringLiteral("deviceMemoryChart"));
  device_chart_->setVisible(false);  // shown once a unit reports device memory (GPU runs)
  bars_ = new LayerBars(this);
  process_ = new QLabel(this);
  process_->setTextFormat(Qt::RichText);
  layout->addWidget(gauge_);
  layout->addWidget(chart_, 3);
  layout->addWidget(device_chart_, 3);
  layout->addWidget(bars_, 2);
  layout->addWidget(process_);
  refreshText();
}

void MemoryPanel::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  gauge_->setRun(run);
  chart_->setRun(run);
  device_chart_->setRun(run);
  bars_->setRun(run);
  if (run) {
    connect(run, &RunViewModel::unitChanged, this, &MemoryPanel::refreshText);
    connect(run, &RunViewModel::stateChanged, this, &MemoryPanel::refreshText);
  }
  refreshText();
}

void MemoryPanel::refreshText() {
  const QString unit = run_ ? unitNoun(run_->family()) : tr("unit");
  if (run_ && showsFlops(*run_)) {
    gauge_->setToolTip(tr("FLOPs of the latest %1 (per image) and their share of the largest %1 so far (a full "
                          "computation); right: the run's total")
                           .arg(unit));
    chart_->setToolTip(
        tr("FLOPs per %1: grey = every token and both CFG branches computed, teal = cached features reused").arg(unit));
    bars_->setToolTip(
        tr("Grid tokens whose features each %1 recomputed; the others came from the token cache").arg(unit));
  } else {
    gauge_->setToolTip(
        tr("KV bytes retained now (teal) vs what the uncompressed cache would hold (grey); orange: peak allocated"));
    chart_->setToolTip(tr("KV bytes over the run; dashed: the full cache; yellow markers: policy changes (they apply "
                          "from the next %1)")
                           .arg(unit));
    bars_->setToolTip(
        tr("Entries retained per layer for image 0 (grey: what the full cache holds); red: evicted during the last %1")
            .arg(unit));
  }
  // The process's memory as the engine reported it with the latest unit.
  const MemorySample* last = run_ && !run_->memory().empty() ? &run_->memory().back() : nullptr;
  QString device = run_ ? QString::fromStdString(run_->started().device) : QString();
  const QString deviceText =
      device.isEmpty() ? QString()
                       : QStringLiteral(" · <span style='color:#9aa0ad'>%1</span>").arg(device.toHtmlEscaped());
  QString text;
  if (last && last->process_bytes >= 0) {
    text = tr("<span style='color:#9aa0ad'>process</span> %1 <span style='color:#9aa0ad'>(peak %2)</span>%3")
               .arg(formatBytes(last->process_bytes),
                    last->process_peak_bytes >= 0 ? formatBytes(last->process_peak_bytes) : QStringLiteral("—"),
                    deviceText);
  } else {
    text = tr("<span style='color:#9aa0ad'>process memory: reported during a run</span>%1").arg(deviceText);
  }
  // GPU runs add the device's memory (LibTorch's caching allocator); CPU runs say so.
  if (last && last->device_allocated_bytes >= 0) {
    text += tr("<br><span style='color:#9aa0ad'>GPU</span> %1 <span style='color:#9aa0ad'>(peak %2, reserved %3 of "
               "%4)</span>")
                .arg(formatBytes(last->device_allocated_bytes), formatBytes(last->device_peak_bytes),
                     formatBytes(last->device_reserved_bytes), formatBytes(last->device_total_bytes));
  } else if (last) {
    text += tr("<br><span style='color:#9aa0ad'>GPU memory: none in use (CPU run)</span>");
  }
  process_->setText(text);
  // The GPU chart while the run reports device memory; CPU runs keep the panel as it was.
  device_chart_->setVisible(last && last->device_allocated_bytes >= 0);
  process_->setToolTip(
      tr("Process: resident memory now and its peak. GPU (on CUDA runs): what live tensors hold now, "
         "their peak in this run, and what the caching allocator reserves of the device's memory."));
}

}  // namespace kvs::ui
