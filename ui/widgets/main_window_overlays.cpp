#include "ui/widgets/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QShortcut>
#include <QSlider>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/errors.h"
#include "engine/session/generation_metadata.h"
#include "ui/bridge/generation_worker.h"
#include "ui/bridge/log_bridge.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/history_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/compare_view.h"
#include "ui/widgets/debug_overlay.h"
#include "ui/widgets/error_banner.h"
#include "ui/widgets/generation_canvas.h"
#include "ui/widgets/help_dialog.h"
#include "ui/widgets/history_gallery.h"
#include "ui/widgets/log_panel.h"
#include "ui/widgets/memory_panel.h"
#include "ui/widgets/model_manager_dialog.h"
#include "ui/widgets/parameter_panel.h"
#include "ui/widgets/prompt_attention_strip.h"
#include "ui/widgets/small_multiples_view.h"

#ifndef KVSTUDIO_VERSION
#define KVSTUDIO_VERSION "dev"
#endif

namespace kvs::ui {

void MainWindow::applyOverlayControls() {
  unsigned flags = kOverlayNone;
  if (show_attention_->isChecked()) flags |= kOverlayAttention;
  if (show_retained_->isChecked()) flags |= kOverlayRetained;
  if (show_regions_->isChecked()) flags |= kOverlayRegions;
  if (show_grid_->isChecked()) flags |= kOverlayGrid;
  canvas_->setOverlays(flags);
  prompt_strip_->setOverlayEnabled(show_attention_->isChecked());
  canvas_->setMaskSelection(mask_layer_->currentIndex() - 1, mask_head_->currentIndex() - 1);
  multiples_->setSelection(mask_layer_->currentIndex() - 1, mask_head_->currentIndex() - 1);
}

bool MainWindow::selectLayerHead(int64_t layer, int64_t head) {
  if (layer < -1 || head < -1 || layer + 1 >= mask_layer_->count() || head + 1 >= mask_head_->count()) return false;
  mask_layer_->setCurrentIndex(static_cast<int>(layer) + 1);
  mask_head_->setCurrentIndex(static_cast<int>(head) + 1);
  return true;
}

void MainWindow::setOverlays(unsigned flags) {
  show_attention_->setChecked(flags & kOverlayAttention);
  show_retained_->setChecked(flags & kOverlayRetained);
  show_regions_->setChecked(flags & kOverlayRegions);
  show_grid_->setChecked(flags & kOverlayGrid);
  applyOverlayControls();
}

void MainWindow::refreshMaskChoices() {
  const int64_t layers = model_.n_layer, heads = model_.kv_heads;
  if (mask_layer_->count() == layers + 1 && mask_head_->count() == heads + 1) return;
  const QSignalBlocker a(mask_layer_), b(mask_head_);
  const int l = mask_layer_->currentIndex(), h = mask_head_->currentIndex();
  mask_layer_->clear();
  mask_head_->clear();
  mask_layer_->addItem(tr("all / mean"));
  for (int64_t i = 0; i < layers; ++i) mask_layer_->addItem(QStringLiteral("L%1").arg(i));
  mask_head_->addItem(tr("all / mean"));
  for (int64_t i = 0; i < heads; ++i) mask_head_->addItem(QStringLiteral("H%1").arg(i));
  mask_layer_->setCurrentIndex(l >= 0 && l <= layers ? l : 0);
  mask_head_->setCurrentIndex(h >= 0 && h <= heads ? h : 0);
  applyOverlayControls();
}

void MainWindow::setDebugOverlayVisible(bool visible) {
  if (visible && !debug_) {
    debug_ = new DebugOverlay(worker_, generate_page_);
    debug_->setRun(run_);
  }
  if (!debug_) return;
  placeDebugOverlay();
  debug_->setVisible(visible);
  if (visible) debug_->raise();
}

bool MainWindow::debugOverlayVisible() const { return debug_ && debug_->isVisible(); }

DebugOverlay* MainWindow::debugOverlay() const { return debug_.data(); }

void MainWindow::placeDebugOverlay() {
  if (!debug_) return;
  const QRect c = canvas_->geometry();
  const int w = std::min(c.width() - 20, std::max(420, c.width() * 9 / 20));
  debug_->setGeometry(c.right() - w - 8, c.top() + 8, w, c.height() - 16);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == canvas_ && (event->type() == QEvent::Resize || event->type() == QEvent::Move)) placeDebugOverlay();
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::showTab(int index) { tabs_->setCurrentIndex(index); }

}  // namespace kvs::ui
