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
  if (!options_.galleryDir.isEmpty()) {
    const QString problem = history_->openGallery(options_.galleryDir, QStringLiteral(KVSTUDIO_VERSION));
    if (!problem.isEmpty())
      showError(tr("The gallery cannot be opened, so images are kept for this session only: %1").arg(problem));
  }

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
  buildPages();
  buildDocks();
  connectSignals();
  applyOverlayControls();
  resize(1500, 920);
}

// The central area: the error banner over the tabs (Generate, Compare, History).
void MainWindow::buildPages() {
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
}

// The docks: parameters (left), memory and the cache map (right), the log
// (bottom); the status bar and the timer that batches policy changes.
void MainWindow::buildDocks() {
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
