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

QAction* addShortcutAction(QWidget* owner, QMenu* menu, const QString& text, const QList<QKeySequence>& keys,
                           const std::function<void()>& slot) {
  auto* a = new QAction(text, owner);
  a->setShortcuts(keys);
  a->setShortcutContext(Qt::WindowShortcut);
  QObject::connect(a, &QAction::triggered, owner, slot);
  if (menu) menu->addAction(a);
  owner->addAction(a);
  return a;
}

}  // namespace

QString compareSchedulePreferenceKey(CompareSchedulePreference p) {
  switch (p) {
    case CompareSchedulePreference::Together: return QStringLiteral("together");
    case CompareSchedulePreference::OneAfterAnother: return QStringLiteral("one-after-another");
    case CompareSchedulePreference::Automatic: break;
  }
  return QStringLiteral("auto");
}

CompareSchedulePreference parseCompareSchedulePreference(const QString& key, bool* ok) {
  for (auto p : {CompareSchedulePreference::Automatic, CompareSchedulePreference::Together,
                 CompareSchedulePreference::OneAfterAnother}) {
    if (key == compareSchedulePreferenceKey(p)) {
      if (ok) *ok = true;
      return p;
    }
  }
  if (ok) *ok = false;
  return CompareSchedulePreference::Automatic;
}

MainWindow::MainWindow(const MainWindowOptions& options, QWidget* parent)
    : QMainWindow(parent),
      options_(options),
      worker_(new GenerationWorker(this)),
      log_bridge_(new LogBridge(this)),
      run_(new RunViewModel(this)),
      compare_(new CompareViewModel(worker_, this)),
      history_(new HistoryModel(this)) {
  setWindowTitle(QStringLiteral("KV Studio"));
  setObjectName(QStringLiteral("kvstudioMainWindow"));
  QSettings settings;
  locations_ = options_.useSettings ? ModelLocations::load(settings, options_.bundledDemo)
                                    : ModelLocations{options_.bundledDemo, ModelLocations::defaultUserModels(), {}};
  buildUi();
  buildMenus();

  // Which model: --model, else the last used, else the demo.
  QString dir = options_.model;
  if (dir.isEmpty() && options_.useSettings) dir = settings.value(QStringLiteral("generation/model")).toString();
  if (dir.isEmpty() || !openModel(dir)) openModel(options_.bundledDemo);
  if (options_.useSettings) restoreSettings();
  if (options_.compareSchedule) setCompareSchedulePreference(*options_.compareSchedule);
  onRunStateChanged();
}

MainWindow::~MainWindow() {
  // Join the workers before the view-models they signal go away.
  worker_->shutdown();
  compare_->shutdown();
}

void MainWindow::buildUi() {
  // Central: banner over the tabs.
  auto* central = new QWidget(this);
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->setSpacing(0);
  banner_ = new ErrorBanner(central);
  cl->addWidget(banner_);
  tabs_ = new QTabWidget(central);
  tabs_->setDocumentMode(true);
  cl->addWidget(tabs_, 1);
  setCentralWidget(central);

  // Generate page: overlay controls, canvas, progress.
  generate_page_ = new QWidget(tabs_);
  auto* gl = new QVBoxLayout(generate_page_);
  gl->setContentsMargins(6, 6, 6, 6);
  gl->setSpacing(6);
  auto* overlayBar = new QHBoxLayout;
  show_attention_ = new QCheckBox(tr("Attention"), generate_page_);
  show_attention_->setToolTip(
      tr("Heatmap of where the latest line's last token attended, with the condition token(s) in the side strip (A)"));
  show_retained_ = new QCheckBox(tr("Retained"), generate_page_);
  show_retained_->setToolTip(tr("Dim the image tokens evicted from the KV cache for the chosen layer/head (K)"));
  show_regions_ = new QCheckBox(tr("Regions"), generate_page_);
  show_regions_->setToolTip(
      tr("Outline the current line and the policy's regions: LineAR anchors / mid / recent lines, StreamingLLM sinks / "
         "window (L)"));
  show_grid_ = new QCheckBox(tr("Grid"), generate_page_);
  show_grid_->setToolTip(tr("Token grid lines (G)"));
  show_attention_->setChecked(true);
  show_retained_->setChecked(true);
  show_regions_->setChecked(true);
  mask_layer_ = new QComboBox(generate_page_);
  mask_layer_->setToolTip(tr("Layer of the retained mask (now) and of the attention map (from the next generation)"));
  mask_head_ = new QComboBox(generate_page_);
  mask_head_->setToolTip(tr("KV head of the retained mask (now) and of the attention map (from the next generation)"));
  opacity_ = new QSlider(Qt::Horizontal, generate_page_);
  opacity_->setRange(30, 255);
  opacity_->setValue(200);
  opacity_->setMaximumWidth(80);
  opacity_->setToolTip(tr("Attention overlay opacity"));
  overlayBar->addWidget(new QLabel(tr("Overlays:"), generate_page_));
  overlayBar->addWidget(show_attention_);
  overlayBar->addWidget(show_retained_);
  overlayBar->addWidget(show_regions_);
  overlayBar->addWidget(show_grid_);
  overlayBar->addSpacing(12);
  overlayBar->addWidget(new QLabel(tr("Layer"), generate_page_));
  overlayBar->addWidget(mask_layer_);
  overlayBar->addWidget(new QLabel(tr("Head"), generate_page_));
  overlayBar->addWidget(mask_head_);
  overlayBar->addSpacing(12);
  overlayBar->addWidget(new QLabel(tr("Opacity"), generate_page_));
  overlayBar->addWidget(opacity_);
  overlayBar->addStretch(1);
  gl->addLayout(overlayBar);
  canvas_ = new GenerationCanvas(generate_page_);
  canvas_->setObjectName(QStringLiteral("canvas"));
  canvas_->setRun(run_);
  canvas_->installEventFilter(this);
  gl->addWidget(canvas_, 1);
  // Text models: the prompt's tokens shaded by the attention of the latest token.
  prompt_strip_ = new PromptAttentionStrip(generate_page_);
  prompt_strip_->setObjectName(QStringLiteral("promptStrip"));
  prompt_strip_->setRun(run_);
  gl->addWidget(prompt_strip_);
  auto* progressRow = new QHBoxLayout;
  progress_ = new QProgressBar(generate_page_);
  progress_->setRange(0, 1000);
  progress_->setTextVisible(true);
  progress_text_ = new QLabel(generate_page_);
  progress_text_->setMinimumWidth(240);
  progressRow->addWidget(progress_, 1);
  progressRow->addWidget(progress_text_);
  gl->addLayout(progressRow);
  tabs_->addTab(generate_page_, tr("Generate"));

  compare_view_ = new CompareView(compare_, tabs_);
  tabs_->addTab(compare_view_, tr("Compare"));
  gallery_ = new HistoryGallery(history_, tabs_);
  tabs_->addTab(gallery_, tr("History"));

  // Left: parameters.
  panel_ = new ParameterPanel(this);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(panel_);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setMinimumWidth(std::max(300, panel_->minimumSizeHint().width() + 16));
  auto* left = new QDockWidget(tr("Parameters"), this);
  left->setObjectName(QStringLiteral("parametersDock"));
  left->setWidget(scroll);
  left->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  addDockWidget(Qt::LeftDockWidgetArea, left);

  // Right: memory and the cache map.
  auto* rightSplit = new QSplitter(Qt::Vertical, this);
  memory_ = new MemoryPanel(rightSplit);
  memory_->setRun(run_);
  auto* mapBox = new QWidget(rightSplit);
  auto* ml = new QVBoxLayout(mapBox);
  ml->setContentsMargins(6, 0, 6, 6);
  map_title_ = new QLabel(tr("Cache map · layers × KV heads"), mapBox);
  map_title_->setStyleSheet(QStringLiteral("color:#c9d1d9;font-weight:bold"));
  ml->addWidget(map_title_);
  multiples_ = new SmallMultiplesView(mapBox);
  multiples_->setRun(run_);
  ml->addWidget(multiples_, 1);
  rightSplit->addWidget(memory_);
  rightSplit->addWidget(mapBox);
  rightSplit->setStretchFactor(0, 3);
  rightSplit->setStretchFactor(1, 2);
  auto* right = new QDockWidget(tr("KV cache"), this);
  right->setObjectName(QStringLiteral("memoryDock"));
  right->setWidget(rightSplit);
  right->setMinimumWidth(300);
  right->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                     QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::RightDockWidgetArea, right);

  // Bottom: log.
  log_panel_ = new LogPanel(this);
  auto* bottom = new QDockWidget(tr("Log"), this);
  bottom->setObjectName(QStringLiteral("logDock"));
  bottom->setWidget(log_panel_);
  bottom->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                      QDockWidget::DockWidgetClosable);
  addDockWidget(Qt::BottomDockWidgetArea, bottom);
  resizeDocks({bottom}, {90}, Qt::Vertical);
  resizeDocks({left, right}, {350, 360}, Qt::Horizontal);

  status_label_ = new QLabel(this);
  statusBar()->addWidget(status_label_, 1);

  policy_change_timer_ = new QTimer(this);
  policy_change_timer_->setSingleShot(true);
  policy_change_timer_->setInterval(250);
  connect(policy_change_timer_, &QTimer::timeout, this, [this] {
    if (!run_->active() || pending_policy_.isEmpty()) return;
    worker_->requestPolicyChange(pending_policy_);
    log_panel_->append(
        LogBridge::Info, QStringLiteral("ui"),
        tr("policy change to %1 requested: applies at the next %2").arg(pending_policy_, unitNoun(run_->family())));
  });

  // Wiring.
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
    if (const auto* c = firstUseCalibration(QString::fromStdString(run_->request().policy), run_->family()))
      calibrated_models_.insert(calibrationKey(QString::fromStdString(run_->request().model_path),
                                               QString::fromStdString(run_->request().policy), *c,
                                               run_->request().cfg_scale));
    history_->addResult(run_->request(), run_->result(), model_.class_names);
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
                            tr("compare"));
    panel_->setRunning(false);
    bool ok = compare_->rows().size() == compare_->paneCount();
    Q_EMIT compareFinished(ok);
  });
  connect(gallery_, &HistoryGallery::recallRequested, this, &MainWindow::recall);
  connect(gallery_, &HistoryGallery::saveRequested, this, [this](int row) { savePng(row, QString()); });
  connect(gallery_, &HistoryGallery::openRequested, this, [this] { openPng(QString()); });
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
  applyOverlayControls();
  resize(1500, 920);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  addShortcutAction(this, file, tr("&Open PNG…"), {QKeySequence::Open}, [this] { openPng(QString()); });
  addShortcutAction(this, file, tr("&Save PNG…"), {QKeySequence::Save},
                    [this] { savePng(gallery_->currentRow() >= 0 ? gallery_->currentRow() : 0, QString()); });
  addShortcutAction(this, file, tr("&Models…"), {QKeySequence(Qt::CTRL | Qt::Key_M)}, [this] { showModelManager(); });
  file->addSeparator();
  addShortcutAction(this, file, tr("&Quit"), {QKeySequence::Quit}, [this] { close(); });

  QMenu* runMenu = menuBar()->addMenu(tr("&Run"));
  addShortcutAction(this, runMenu, tr("&Generate"),
                    {QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)},
                    [this] { generate(); });
  addShortcutAction(this, runMenu, tr("&Compare"),
                    {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return),
                     QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Enter)},
                    [this] { runCompare(compare_view_->configs()); });
  QMenu* schedule = runMenu->addMenu(tr("Compare &panes"));
  auto* scheduleGroup = new QActionGroup(this);
  const std::pair<CompareSchedulePreference, QString> choices[] = {
      {CompareSchedulePreference::Automatic, tr("Automatic (at once on a GPU, one after another on a CPU)")},
      {CompareSchedulePreference::Together, tr("At once (each pane loads its own copy of the model)")},
      {CompareSchedulePreference::OneAfterAnother, tr("One after another (fair tokens/s on a CPU)")}};
  for (const auto& [preference, text] : choices) {
    QAction* a = schedule->addAction(text);
    a->setCheckable(true);
    a->setChecked(preference == compare_schedule_);
    scheduleGroup->addAction(a);
    connect(a, &QAction::triggered, this, [this, p = preference] { setCompareSchedulePreference(p); });
    compare_schedule_actions_.push_back(a);
  }
  addShortcutAction(this, runMenu, tr("C&ancel"), {QKeySequence(Qt::Key_Escape)}, [this] { cancel(); });
  addShortcutAction(this, runMenu, tr("&Recall parameters"), {QKeySequence(Qt::CTRL | Qt::Key_R)},
                    [this] { recall(gallery_->currentRow() >= 0 ? gallery_->currentRow() : 0); });

  QMenu* view = menuBar()->addMenu(tr("&View"));
  addShortcutAction(this, view, tr("Generate tab"), {QKeySequence(Qt::CTRL | Qt::Key_1)}, [this] { showTab(0); });
  addShortcutAction(this, view, tr("Compare tab"), {QKeySequence(Qt::CTRL | Qt::Key_2)}, [this] { showTab(1); });
  addShortcutAction(this, view, tr("History tab"), {QKeySequence(Qt::CTRL | Qt::Key_3)}, [this] { showTab(2); });
  view->addSeparator();
  addShortcutAction(this, view, tr("Attention overlay"), {QKeySequence(Qt::Key_A)},
                    [this] { show_attention_->toggle(); });
  addShortcutAction(this, view, tr("Retained-token overlay"), {QKeySequence(Qt::Key_K)},
                    [this] { show_retained_->toggle(); });
  addShortcutAction(this, view, tr("Regions overlay"), {QKeySequence(Qt::Key_L)}, [this] { show_regions_->toggle(); });
  addShortcutAction(this, view, tr("Grid"), {QKeySequence(Qt::Key_G)}, [this] { show_grid_->toggle(); });
  view->addSeparator();
  addShortcutAction(this, view, tr("Debug overlay"), {QKeySequence(Qt::Key_F12)},
                    [this] { setDebugOverlayVisible(!debugOverlayVisible()); });
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  addShortcutAction(this, help, tr("&Shortcuts and overlays"), {QKeySequence(Qt::Key_F1)}, [this] {
    auto* dialog = new HelpDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
  });
  addShortcutAction(this, help, tr("&About KV Studio"), {}, [this] {
    QMessageBox::about(this, tr("About KV Studio"),
                       tr("<b>KV Studio %1</b><br>Autoregressive image generation with a compressed, visible KV cache.")
                           .arg(QStringLiteral(KVSTUDIO_VERSION)));
  });
}

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
  kvs::GenerationRequest request = s.toRequest();
  // A next-scale run has a handful of scales and each preview is the point of
  // the run (the whole image refined): decode every one rather than rate-limit them.
  if (family().unit == kvs::GenerationUnit::Scale) request.preview_max_share = 0;
  try {
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

void MainWindow::openPng(const QString& path_in) {
  QString path = path_in;
  if (path.isEmpty())
    path = QFileDialog::getOpenFileName(this, tr("Open a KV Studio PNG"), QString(), tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  try {
    const kvs::RecalledImage r = kvs::read_generation_png(path.toStdString());
    QString className = QString::fromStdString(r.class_name);
    history_->addRecalled(RunViewModel::toQImage(r.image), r.request, className, path);
    recall(0);
    showTab(2);
    gallery_->selectRow(0);
  } catch (const kvs::Error& e) {
    showError(QString::fromStdString(e.what()));
  }
}

void MainWindow::savePng(int row, const QString& path_in) {
  if (row < 0 || row >= history_->size()) {
    showError(tr("Nothing to save yet: generate an image first"));
    return;
  }
  const HistoryEntry& e = history_->entry(row);
  QString path = path_in;
  if (path.isEmpty()) {
    const QString suggestion = e.request.is_text()
                                   ? QStringLiteral("kvstudio_prompt_s%1.png").arg(e.request.seed)
                                   : QStringLiteral("kvstudio_c%1_s%2.png").arg(e.classId()).arg(e.request.seed);
    path = QFileDialog::getSaveFileName(this, tr("Save PNG"), suggestion, tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    if (!path.endsWith(QStringLiteral(".png"), Qt::CaseInsensitive)) path += QStringLiteral(".png");
  }
  try {
    history_->savePng(row, path, QStringLiteral(KVSTUDIO_VERSION));
    showNotice(tr("Saved %1 (parameters in its metadata)").arg(path));
  } catch (const kvs::Error& e) {
    showError(QString::fromStdString(e.what()));
  }
}

void MainWindow::recall(int row) {
  if (row < 0 || row >= history_->size()) return;
  const HistoryEntry& e = history_->entry(row);
  const kvs::GenerationRequest r = e.singleImageRequest();
  GenerationSettings s = GenerationSettings::fromRequest(r);
  s.promptHistory = panel_->promptHistory();  // a request does not carry the history
  const QString modelDir = QString::fromStdString(r.model_path);
  if (!modelDir.isEmpty() &&
      QFileInfo(modelDir).canonicalFilePath() != QFileInfo(QString::fromStdString(model_.dir)).canonicalFilePath()) {
    if (QFileInfo::exists(modelDir + QStringLiteral("/model.json"))) openModel(modelDir);
    else
      showError(tr("The model this image was made with (%1) is not here; parameters recalled for %2")
                    .arg(modelDir, QString::fromStdString(model_.name)));
  }
  panel_->setSettings(s);
  showNotice(
      tr("Parameters recalled: %1, seed %2, %3").arg(e.className).arg(r.seed).arg(QString::fromStdString(r.policy)));
}

void MainWindow::setCompareSchedulePreference(CompareSchedulePreference preference) {
  compare_schedule_ = preference;
  const int index = static_cast<int>(preference);
  if (index < compare_schedule_actions_.size()) compare_schedule_actions_[index]->setChecked(true);
}

void MainWindow::saveSettings() {
  if (!options_.useSettings) return;
  QSettings settings;
  panel_->settings().save(settings);
  locations_.save(settings);
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  settings.setValue(QStringLiteral("view/overlays"), canvas_->overlays());
  settings.setValue(QStringLiteral("view/maskLayer"), mask_layer_->currentIndex());
  settings.setValue(QStringLiteral("view/maskHead"), mask_head_->currentIndex());
  settings.setValue(QStringLiteral("view/opacity"), opacity_->value());
  settings.setValue(QStringLiteral("view/tab"), tabs_->currentIndex());
  settings.setValue(QStringLiteral("compare/configs"), compare_view_->configs());
  settings.setValue(QStringLiteral("compare/schedule"), compareSchedulePreferenceKey(compare_schedule_));
}

void MainWindow::restoreSettings() {
  QSettings settings;
  if (settings.contains(QStringLiteral("generation/class"))) {
    GenerationSettings defaults = panel_->settings();
    GenerationSettings s = GenerationSettings::load(settings, defaults);
    panel_->setSettings(s);
  }
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  if (settings.contains(QStringLiteral("view/overlays")))
    setOverlays(settings.value(QStringLiteral("view/overlays")).toUInt());
  mask_layer_->setCurrentIndex(
      std::clamp(settings.value(QStringLiteral("view/maskLayer"), 0).toInt(), 0, mask_layer_->count() - 1));
  mask_head_->setCurrentIndex(
      std::clamp(settings.value(QStringLiteral("view/maskHead"), 0).toInt(), 0, mask_head_->count() - 1));
  opacity_->setValue(settings.value(QStringLiteral("view/opacity"), 200).toInt());
  tabs_->setCurrentIndex(std::clamp(settings.value(QStringLiteral("view/tab"), 0).toInt(), 0, 2));
  const QStringList configs = settings.value(QStringLiteral("compare/configs")).toStringList();
  if (!configs.isEmpty()) compare_view_->setConfigs(configs);
  setCompareSchedulePreference(
      parseCompareSchedulePreference(settings.value(QStringLiteral("compare/schedule")).toString()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
  closing_ = true;
  saveSettings();
  // Stops a running generation before its next token and joins the worker:
  // closing mid-generation never waits for the rest of the image.
  worker_->shutdown();
  compare_->shutdown();
  event->accept();
}

}  // namespace kvs::ui
