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

void MainWindow::deleteImages(const QList<int>& rows, bool confirm) {
  if (rows.isEmpty()) return;
  if (confirm &&
      QMessageBox::question(this, tr("Delete images"),
                            history_->hasGallery() ? tr("Delete %n image(s) from the gallery, with their PNG files?",
                                                        "", static_cast<int>(rows.size()))
                                                   : tr("Remove %n image(s) from this session's history?", "",
                                                        static_cast<int>(rows.size()))) != QMessageBox::Yes)
    return;
  try {
    history_->removeRows(rows);
    showNotice(tr("Deleted %n image(s)", "", static_cast<int>(rows.size())));
  } catch (const kvs::Error& e) {
    showError(QString::fromStdString(e.what()));
  }
}

QStringList MainWindow::exportImages(const QList<int>& rows, const QString& folder_in) {
  QString folder = folder_in;
  if (folder.isEmpty()) folder = QFileDialog::getExistingDirectory(this, tr("Export images to"));
  if (folder.isEmpty() || rows.isEmpty()) return {};
  try {
    const QStringList written = history_->exportRows(rows, folder);
    showNotice(tr("Exported %n image(s) to %1", "", static_cast<int>(written.size())).arg(folder));
    return written;
  } catch (const kvs::Error& e) {
    showError(QString::fromStdString(e.what()));
    return {};
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
  showNotice(tr("Parameters recalled: %1, seed %2, %3")
                 .arg(e.className)
                 .arg(r.seed)
                 .arg(QString::fromStdString(r.policy.text())));
}

}  // namespace kvs::ui
