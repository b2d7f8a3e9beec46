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

// What the window does when its parts speak: the parameter panel, the run's
// and the comparison's view-models, the history gallery, the overlay controls
// and the cache map.
void MainWindow::connectSignals() {
  connect(log_bridge_, &LogBridge::line, log_panel_, &LogPanel::append);
  connect(panel_, &ParameterPanel::generateRequested, this, [this] { generate(); });
  connect(panel_, &ParameterPanel::cancelRequested, this, &MainWindow::cancel);
  connect(panel_, &ParameterPanel::policySpecChanged, this, &MainWindow::onPolicySpecEdited);
  connect(panel_, &ParameterPanel::modelsRequested, this, &MainWindow::showModelManager);
  connect(run_, &RunViewModel::progressChanged, this, &MainWindow::refreshProgress);
  connect(run_, &RunViewModel::stateChanged, this, &MainWindow::onRunStateChanged);
  connect(run_, &RunViewModel::unitChanged, this, &MainWindow::refreshMaskChoices);
  connect(run_, &RunViewModel::policyMarkersChanged, this, [this] {
    const auto& markers = run_->policyMarkers();
    if (markers.isEmpty()) return;
    const PolicyMarker& m = markers.back();
    const QString unit = unitNoun(run_->family());
    if (m.accepted) showNotice(tr("Policy %1 active from %2 %3").arg(m.policy, unit).arg(m.unit + 2));
    else showError(tr("Policy change refused at %1 %2: %3").arg(unit).arg(m.unit + 1).arg(m.message));
  });
  connect(run_, &RunViewModel::finished, this, [this] {
    if (const auto* c = firstUseCalibration(QString::fromStdString(run_->request().policy.text()), run_->family()))
      calibrated_models_.insert(calibrationKey(QString::fromStdString(run_->request().model_path),
                                               QString::fromStdString(run_->request().policy.text()), *c,
                                               run_->request().cfg_scale));
    history_->addResult(run_->request(), run_->result(), model_.class_names, QStringLiteral("generated"),
                        model_.family);
    Q_EMIT runFinished(true);
  });
  connect(run_, &RunViewModel::failed, this, [this](const QString& message, bool cancelled) {
    if (!cancelled) showError(message);
    else showNotice(tr("Generation cancelled"));
    Q_EMIT runFinished(false);
  });
  connect(compare_view_, &CompareView::runRequested, this, [this](const QStringList& specs) { runCompare(specs); });
  connect(compare_view_, &CompareView::cancelRequested, this, &MainWindow::cancel);
  connect(compare_, &CompareViewModel::failed, this, &MainWindow::showError);
  // While a comparison runs, the memory panel and cache map follow its running pane.
  connect(compare_, &CompareViewModel::panesChanged, this, [this] {
    for (int i = 0; i < compare_->paneCount(); ++i) {
      RunViewModel* pane = compare_->pane(i);
      connect(pane, &RunViewModel::stateChanged, this, [this, pane](RunState state) {
        if (state != RunState::Running) return;
        memory_->setRun(pane);
        multiples_->setRun(pane);
        if (debug_) debug_->setRun(pane);
      });
    }
  });
  connect(compare_, &CompareViewModel::finished, this, [this] {
    for (int i = 0; i < compare_->paneCount(); ++i)
      if (compare_->pane(i)->result())
        history_->addResult(compare_->pane(i)->request(), compare_->pane(i)->result(), model_.class_names,
                            QStringLiteral("compare"), model_.family);
    panel_->setRunning(false);
    bool ok = compare_->rows().size() == compare_->paneCount();
    Q_EMIT compareFinished(ok);
  });
  connect(gallery_, &HistoryGallery::recallRequested, this, &MainWindow::recall);
  connect(gallery_, &HistoryGallery::saveRequested, this, [this](int row) { savePng(row, QString()); });
  connect(gallery_, &HistoryGallery::openRequested, this, [this] { openPng(QString()); });
  connect(gallery_, &HistoryGallery::deleteRequested, this,
          [this](const QList<int>& rows) { deleteImages(rows, true); });
  connect(gallery_, &HistoryGallery::exportRequested, this, [this](const QList<int>& rows) { exportImages(rows, {}); });
  connect(history_, &HistoryModel::galleryProblem, this, [this](const QString& message) {
    showError(tr("Not kept in the gallery (it stays in this session's history): %1").arg(message));
  });
  for (QCheckBox* box : {show_attention_, show_retained_, show_regions_, show_grid_})
    connect(box, &QCheckBox::toggled, this, &MainWindow::applyOverlayControls);
  connect(mask_layer_, &QComboBox::currentIndexChanged, this, &MainWindow::applyOverlayControls);
  connect(mask_head_, &QComboBox::currentIndexChanged, this, &MainWindow::applyOverlayControls);
  connect(opacity_, &QSlider::valueChanged, canvas_, &GenerationCanvas::setAttentionOpacity);
  connect(multiples_, &SmallMultiplesView::tileClicked, this, [this](int64_t layer, int64_t head) {
    mask_layer_->setCurrentIndex(static_cast<int>(layer) + 1);
    mask_head_->setCurrentIndex(static_cast<int>(head) + 1);
    show_retained_->setChecked(true);
  });
}

}  // namespace kvs::ui
