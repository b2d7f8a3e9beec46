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
namespace {

QString formatSeconds(double s) {
  if (s < 0) return QStringLiteral("—");
  if (s < 60) return QStringLiteral("%1 s").arg(s, 0, 'f', s < 10 ? 1 : 0);
  return QStringLiteral("%1 min %2 s").arg(static_cast<int>(s) / 60).arg(static_cast<int>(s) % 60);
}

}  // namespace

bool MainWindow::openModel(const QString& dir) {
  const kvs::ModelSummary summary = kvs::summarize_model_bundle(dir.toStdString());
  if (!summary.usable()) {
    showError(tr("Model %1 cannot be used: %2").arg(dir, QString::fromStdString(summary.problem)));
    return false;
  }
  model_ = summary;
  panel_->setModel(model_);
  applyFamily();
  refreshMaskChoices();
  status_label_->setText(
      tr("Model %1 · %2").arg(QString::fromStdString(model_.name), QString::fromStdString(model_.architecture)));
  return true;
}

bool MainWindow::generate() {
  if (worker_->busy()) {
    showNotice(tr("A generation is running: press Esc to cancel it first"));
    return false;
  }
  if (!model_.usable()) {
    showError(tr("No usable model: open the model manager (Ctrl+M)"));
    return false;
  }
  if (panel_->seedMode() == SeedMode::RandomEachRun) panel_->rollSeed();
  GenerationSettings s = panel_->settings();
  const QString wrongFamily = policyFamilyProblem(s.policy, family());
  if (!wrongFamily.isEmpty()) {
    showError(wrongFamily);
    return false;
  }
  if (s.text && s.prompt.trimmed().isEmpty()) {
    showError(tr("Type a prompt first: %1 draws what the prompt describes").arg(QString::fromStdString(model_.name)));
    return false;
  }
  s.attentionLayer = mask_layer_->currentIndex() - 1;
  s.attentionHead = mask_head_->currentIndex() - 1;
  s.threads = options_.threads;
  kvs::GenerationRequest request;
  try {
    request = s.toRequest();
    // A next-scale run has a handful of scales and each preview is the point of
    // the run (the whole image refined): decode every one rather than rate-limit them.
    if (family().unit == kvs::GenerationUnit::Scale) request.preview_max_share = 0;
    request.validate();
  } catch (const kvs::Error& e) {
    showError(QString::fromStdString(e.what()));
    return false;
  }
  banner_->hide();
  memory_->setRun(run_);
  multiples_->setRun(run_);
  if (debug_) debug_->setRun(run_);
  const quint64 job = worker_->submit(request);
  run_->setModel(model_);
  const auto calibration = needsCalibration(s.policy, request.cfg_scale);
  run_->setCalibrationPending(calibration ? &*calibration : nullptr);
  run_->track(worker_, job, request);
  panel_->setLastSeed(s.seed);
  if (s.text) panel_->rememberPrompt(s.prompt);
  showTab(0);
  return true;
}

bool MainWindow::runCompare(const QStringList& specs) {
  if (worker_->busy()) {
    showNotice(tr("A generation is running: press Esc to cancel it first"));
    return false;
  }
  GenerationSettings s = panel_->settings();
  if (panel_->seedMode() == SeedMode::RandomEachRun) {
    panel_->rollSeed();
    s = panel_->settings();
  }
  s.batch = 1;
  s.threads = options_.threads;
  if (specs != compare_view_->configs()) compare_view_->setConfigs(specs);
  s.policy = QStringLiteral("full");  // each pane's own spec replaces it
  kvs::GenerationRequest base = s.toRequest();
  if (family().unit == kvs::GenerationUnit::Scale) base.preview_max_share = 0;
  CompareSchedule schedule = automaticCompareSchedule(s.device);
  if (compare_schedule_ == CompareSchedulePreference::Together) schedule = CompareSchedule::Together;
  if (compare_schedule_ == CompareSchedulePreference::OneAfterAnother) schedule = CompareSchedule::OneAfterAnother;
  const QString problem = compare_->start(specs, base, family(), schedule);
  if (!problem.isEmpty()) {
    showError(problem);
    return false;
  }
  for (int i = 0; i < compare_->paneCount(); ++i) {
    compare_->pane(i)->setModel(model_);
    const auto calibration = needsCalibration(compare_->specs().value(i), base.cfg_scale);
    compare_->pane(i)->setCalibrationPending(calibration ? &*calibration : nullptr);
  }
  panel_->setRunning(true);
  banner_->hide();
  showTab(1);
  return true;
}

void MainWindow::cancel() {
  if (compare_->running()) compare_->cancel();
  if (run_->active()) {
    run_->markCancelling();
    worker_->cancelAll();
  }
}

void MainWindow::refreshProgress() {
  const RunViewModel* r = run_;
  progress_->setValue(static_cast<int>(r->fraction() * 1000));
  const kvs::StartedEvent& s = r->started();
  if (r->state() == RunState::Idle) {
    progress_->setFormat(tr("ready"));
    progress_text_->setText(QString());
    return;
  }
  if (r->calibrating()) {
    const auto& c = *r->pendingCalibration();
    progress_->setFormat(tr("Calibrating %1 for this model (first use)…").arg(QString::fromStdString(c.label)));
    progress_text_->setText(tr("%1; the image starts next").arg(QString::fromStdString(c.work)));
    return;
  }
  QString unit;
  if (r->family().unit == kvs::GenerationUnit::Line) {
    const int64_t line = s.grid_width > 0 ? std::min<int64_t>(s.grid_height, r->tokensDone() / s.grid_width) : 0;
    unit = tr("line %1/%2").arg(line).arg(s.grid_height);
  } else {
    unit = r->unitProgressText();
  }
  progress_->setFormat(
      tr("%1 · %2 · %3/%4 tokens").arg(runStateText(r->state()), unit).arg(r->tokensDone()).arg(r->tokensTotal()));
  progress_text_->setText(tr("%1 tok/s · ETA %2 · %3")
                              .arg(r->tokensPerSecond(), 0, 'f', 1)
                              .arg(r->active() ? formatSeconds(r->etaSeconds()) : QStringLiteral("—"))
                              .arg(r->activePolicy()));
}

void MainWindow::onRunStateChanged() {
  const bool busy = run_->active() || compare_->running();
  panel_->setRunning(busy);
  refreshProgress();
}

void MainWindow::onPolicySpecEdited(const QString& spec) {
  if (!run_->active() || spec == run_->activePolicy()) return;
  pending_policy_ = spec;
  policy_change_timer_->start();
}

const kvs::FamilyDescription& MainWindow::family() const { return familyDescription(model_.family); }

bool MainWindow::setPolicySpec(const QString& spec) {
  const QString wrongFamily = policyFamilyProblem(spec, family());
  if (!wrongFamily.isEmpty()) {
    showError(wrongFamily);
    return false;
  }
  const std::string problem = kvs::policy_spec_problem(spec.trimmed().toStdString());
  if (!problem.empty()) {
    showError(QString::fromStdString(problem));
    return false;
  }
  panel_->setPolicySpec(spec);
  return true;
}

// A calibrated policy (HeatKV ranks heads, ScaleKV picks drafter layers from a
// calibration): a bundle without its file gets one made by the session before
// the first unit (once per model, policy, calibration set and CFG in this
// process). HeatKV's calibration serves a run only when it was measured with the
// settings the run asks (file_serves: its classes, CFG and seed); the notice
// names the N.
std::optional<kvs::FamilyDescription::FirstUseCalibration> MainWindow::needsCalibration(const QString& spec,
                                                                                        double cfg) const {
  const auto* c = firstUseCalibration(spec, family());
  if (!c) return std::nullopt;
  const QString dir = QString::fromStdString(model_.dir);
  if (calibrated_models_.contains(calibrationKey(dir, spec, *c, cfg))) return std::nullopt;
  if (c->file_serves) {
    if (c->file_serves(model_.dir, model_.num_classes, spec.trimmed().toStdString(), cfg)) return std::nullopt;
  } else if (QFileInfo::exists(QDir(dir).filePath(QString::fromStdString(c->file)))) {
    return std::nullopt;
  }
  kvs::FamilyDescription::FirstUseCalibration sized = *c;
  if (const int64_t images = calibrationImages(spec, *c); images > 0 && c->images_work)
    sized.work = c->images_work(images);
  return sized;
}

// One key per model, policy, calibration set (HeatKV's N; 0: the default) and
// the CFG the calibration is measured at.
QString MainWindow::calibrationKey(const QString& modelDir, const QString& spec,
                                   const kvs::FamilyDescription::FirstUseCalibration& c, double cfg) {
  return modelDir + QLatin1Char('\n') + QString::fromStdString(c.policy) + QLatin1Char('\n') +
         QString::number(calibrationImages(spec, c)) + QLatin1Char('\n') +
         QString::number(c.calibration_cfg ? c.calibration_cfg(spec.trimmed().toStdString(), cfg) : cfg, 'g', 17);
}

// Everything that depends on the model's family besides the parameter panel
// (which filters its policies itself): overlay names, the cache map's title,
// the compare view's presets and table — all from the family's description:
// what a unit is and which overlays its unit events carry.
void MainWindow::applyFamily() {
  const kvs::FamilyDescription& f = family();
  const QString unit = unitNoun(f);
  if (f.overlays.scale_matrix) {
    show_attention_->setToolTip(tr("Where the latest %1's queries look (on the image, all scales) and the "
                                   "scale-to-scale attention mass (side panel) (A)")
                                    .arg(unit));
    show_retained_->setText(tr("Retained"));
    show_retained_->setToolTip(tr("Side panel: per head, the share of each scale the chosen layer still caches (K)"));
    map_title_->setText(tr("Cache map · per layer: heads × scales"));
    multiples_->setToolTip(
        tr("One tile per layer: rows are KV heads, columns scales (coarse to fine); teal = the scale is still cached, "
           "dark red = evicted, black = not generated yet. Click a tile to choose the layer."));
  } else if (f.overlays.recomputed_tokens) {
    show_attention_->setToolTip(tr("Heatmap of where the tokens predicted at the latest %1 attended, with the "
                                   "condition buffer in the side strip (A)")
                                    .arg(unit));
    show_retained_->setText(tr("Recomputed"));
    show_retained_->setToolTip(
        tr("Hatch the tokens whose features the latest %1 reused from the token cache; clear = recomputed (K)")
            .arg(unit));
    map_title_->setText(tr("Token cache · generation order and this %1").arg(unit));
    multiples_->setToolTip(tr("Left: the %1 at which each token was generated. Right: the tokens recomputed (orange) "
                              "or reused from the token cache (blue) at the latest %1.")
                               .arg(unit));
  } else {
    show_attention_->setToolTip(
        tr("Heatmap of where the latest %1's last token attended, with the condition token(s) in the side strip (A)")
            .arg(unit));
    show_retained_->setText(tr("Retained"));
    show_retained_->setToolTip(tr("Dim the image tokens evicted from the KV cache for the chosen layer/head (K)"));
    map_title_->setText(tr("Cache map · layers × KV heads"));
    multiples_->setToolTip(
        tr("Retained tokens of every layer (rows) and KV head (columns): light = still cached, dark red = evicted. "
           "Click a tile to show it on the canvas."));
  }
  // The policy's regions (as its unit events state them) and the current line
  // are drawn on a grid generated line by line.
  const bool lines = f.unit == kvs::GenerationUnit::Line;
  show_regions_->setEnabled(lines);
  show_regions_->setToolTip(
      lines ? tr("Outline the current line and the regions the policy reports: LineAR anchors / mid / recent lines, "
                 "StreamingLLM sinks / window (L)")
            : tr("Regions and the current line apply to models generated line by line"));
  canvas_->setPlaceholder(tr("Press Generate (Ctrl+Enter) to stream an image here, %1 by %1 (%2)")
                              .arg(unit, QString::fromStdString(f.grid)));
  compare_view_->setFamily(f);
}

void MainWindow::showError(const QString& message) {
  banner_->showMessage(message, ErrorBanner::Kind::Error);
  log_panel_->append(LogBridge::Error, QStringLiteral("ui"), message);
}

void MainWindow::showNotice(const QString& message) {
  banner_->showMessage(message, ErrorBanner::Kind::Notice);
  log_panel_->append(LogBridge::Info, QStringLiteral("ui"), message);
}

void MainWindow::showModelManager() {
  if (!model_manager_) {
    model_manager_ = new ModelManagerDialog(&locations_, this);
    connect(model_manager_, &ModelManagerDialog::modelChosen, this, [this](const QString& dir) {
      if (openModel(dir)) showNotice(tr("Using model %1").arg(QString::fromStdString(model_.name)));
    });
    connect(model_manager_, &ModelManagerDialog::error, this, &MainWindow::showError);
    connect(model_manager_, &ModelManagerDialog::locationsChanged, this, [this] {
      if (!options_.useSettings) return;
      QSettings settings;
      locations_.save(settings);
    });
  } else {
    model_manager_->refresh();
  }
  model_manager_->show();
  model_manager_->raise();
}

void MainWindow::setCompareSchedulePreference(CompareSchedulePreference preference) {
  compare_schedule_ = preference;
  const int index = static_cast<int>(preference);
  if (index < compare_schedule_actions_.size()) compare_schedule_actions_[index]->setChecked(true);
}

}  // namespace kvs::ui
