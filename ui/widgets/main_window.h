#pragma once
// The KV Studio window: parameters on the left, the streaming canvas with its
// overlays in the middle (tabs: Generate / Compare / History), KV memory and the
// layers x heads cache map on the right, the log at the bottom, the F12 debug
// overlay over the canvas. Owns the one generation worker.
#include <QMainWindow>
#include <QPointer>
#include <QSet>
#include <QStringList>

#include <optional>

#include "engine/models/model_catalog.h"
#include "ui/viewmodel/generation_settings.h"
#include "ui/viewmodel/model_family.h"
#include "ui/viewmodel/model_locations.h"

class QAction;
class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QSlider;
class QTabWidget;
class QTimer;

namespace kvs::ui {

class CompareView;
class CompareViewModel;
class DebugOverlay;
class ErrorBanner;
class GenerationCanvas;
class GenerationWorker;
class HistoryGallery;
class HistoryModel;
class LogBridge;
class LogPanel;
class MemoryPanel;
class ModelManagerDialog;
class ParameterPanel;
class PromptAttentionStrip;
class RunViewModel;
class SmallMultiplesView;

// How compare panes are scheduled: automatic (at once on a GPU, one after
// another on a CPU — compare_view_model.h says why) or a fixed choice.
enum class CompareSchedulePreference { Automatic, Together, OneAfterAnother };
QString compareSchedulePreferenceKey(CompareSchedulePreference p);  // "auto" | "together" | "one-after-another"
// Throws nothing: unknown text gives Automatic.
CompareSchedulePreference parseCompareSchedulePreference(const QString& key, bool* ok = nullptr);

struct MainWindowOptions {
  QString bundledDemo;      // the demo bundle shipped with the app
  QString model;            // start with this bundle (else the last used, else the demo)
  bool useSettings = true;  // restore and save QSettings (off for --run-once)
  int threads = 0;          // CPU threads for generation, 0: all cores
  std::optional<CompareSchedulePreference> compareSchedule;  // overrides the setting (--compare-schedule)
  // The per-user gallery's folder (engine/gallery/gallery_location.h) that
  // keeps every image across restarts; "": the history holds this session's only.
  QString galleryDir;
};

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(const MainWindowOptions& options, QWidget* parent = nullptr);
  ~MainWindow() override;

  // The actions a person triggers (public for --run-once and tests).
  bool generate();
  bool runCompare(const QStringList& specs);
  void cancel();
  void setDebugOverlayVisible(bool visible);
  void setCompareSchedulePreference(CompareSchedulePreference preference);
  CompareSchedulePreference compareSchedulePreference() const { return compare_schedule_; }
  bool debugOverlayVisible() const;
  void showTab(int index);  // 0 Generate, 1 Compare, 2 History
  void setOverlays(unsigned flags);
  bool openModel(const QString& dir);
  // The policy panel set to `spec`; a policy of another family or an invalid
  // spec shows the error banner instead (returns false).
  bool setPolicySpec(const QString& spec);
  const kvs::FamilyDescription& family() const;  // of the open model
  // The layer and KV head whose retained mask and attention map the canvas
  // shows (-1: the mean); false, with nothing changed, when the open model has
  // no such layer or head.
  bool selectLayerHead(int64_t layer, int64_t head);
  void openPng(const QString& path);
  void savePng(int historyRow, const QString& path);
  void recall(int historyRow);
  // The history's images at `rows` deleted (from the gallery too, their PNGs
  // with them; `confirm` asks first) or copied into `folder` ("" asks for one).
  void deleteImages(const QList<int>& rows, bool confirm);
  QStringList exportImages(const QList<int>& rows, const QString& folder);

  ParameterPanel* parameters() const { return panel_; }
  GenerationCanvas* canvas() const { return canvas_; }
  PromptAttentionStrip* promptStrip() const { return prompt_strip_; }
  RunViewModel* run() const { return run_; }
  CompareViewModel* compare() const { return compare_; }
  CompareView* compareView() const { return compare_view_; }
  HistoryModel* history() const { return history_; }
  GenerationWorker* worker() const { return worker_; }
  ErrorBanner* banner() const { return banner_; }
  DebugOverlay* debugOverlay() const;
  MemoryPanel* memoryPanel() const { return memory_; }
  const kvs::ModelSummary& model() const { return model_; }
  HistoryGallery* gallery() const { return gallery_; }

 Q_SIGNALS:
  void runFinished(bool ok);
  void compareFinished(bool ok);

 protected:
  void closeEvent(QCloseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void buildUi();  // buildPages, buildDocks, connectSignals (main_window_signals.cpp)
  void buildPages();
  void buildDocks();
  void connectSignals();
  void buildMenus();
  void refreshProgress();
  void onRunStateChanged();
  void onPolicySpecEdited(const QString& spec);
  void applyOverlayControls();
  void refreshMaskChoices();
  void applyFamily();
  std::optional<kvs::FamilyDescription::FirstUseCalibration> needsCalibration(const QString& spec, double cfg) const;
  static QString calibrationKey(const QString& modelDir, const QString& spec,
                                const kvs::FamilyDescription::FirstUseCalibration& c, double cfg);
  void placeDebugOverlay();
  void showError(const QString& message);
  void showNotice(const QString& message);
  void showModelManager();
  void saveSettings();
  void restoreSettings();

  MainWindowOptions options_;
  ModelLocations locations_;
  kvs::ModelSummary model_;
  GenerationWorker* worker_;
  LogBridge* log_bridge_;
  RunViewModel* run_;
  CompareViewModel* compare_;
  HistoryModel* history_;

  ErrorBanner* banner_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QWidget* generate_page_ = nullptr;
  GenerationCanvas* canvas_ = nullptr;
  PromptAttentionStrip* prompt_strip_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* progress_text_ = nullptr;
  QCheckBox* show_attention_ = nullptr;
  QCheckBox* show_retained_ = nullptr;
  QCheckBox* show_regions_ = nullptr;
  QCheckBox* show_grid_ = nullptr;
  QComboBox* mask_layer_ = nullptr;
  QComboBox* mask_head_ = nullptr;
  QSlider* opacity_ = nullptr;
  ParameterPanel* panel_ = nullptr;
  MemoryPanel* memory_ = nullptr;
  SmallMultiplesView* multiples_ = nullptr;
  LogPanel* log_panel_ = nullptr;
  CompareView* compare_view_ = nullptr;
  HistoryGallery* gallery_ = nullptr;
  QPointer<DebugOverlay> debug_;
  QPointer<ModelManagerDialog> model_manager_;
  QLabel* status_label_ = nullptr;
  QLabel* map_title_ = nullptr;
  QSet<QString> calibrated_models_;  // calibrationKey()s of the first-use calibrations made in this process
  QTimer* policy_change_timer_ = nullptr;
  QString pending_policy_;
  CompareSchedulePreference compare_schedule_ = CompareSchedulePreference::Automatic;
  QVector<QAction*> compare_schedule_actions_;  // one per CompareSchedulePreference, in enum order
  bool closing_ = false;
};

}  // namespace kvs::ui
