#pragma once
// The model manager: every bundle found (bundled demo, per-user models folder,
// added folders) with architecture, size and KV bytes per token; broken bundles
// listed with what is wrong; import an official LlamaGen checkpoint through the
// converter on a background thread with a progress dialog.
#include <QDialog>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/models/model_catalog.h"
#include "ui/viewmodel/model_locations.h"

class QLabel;
class QProgressDialog;
class QTableWidget;

namespace kvs::ui {

class ModelManagerDialog : public QDialog {
  Q_OBJECT

 public:
  ModelManagerDialog(ModelLocations* locations, QWidget* parent = nullptr);
  ~ModelManagerDialog() override;

  void refresh();
  const std::vector<kvs::ModelSummary>& models() const { return models_; }

 Q_SIGNALS:
  void modelChosen(const QString& dir);
  void locationsChanged();
  void error(const QString& message);

 private:
  void useSelected();
  void addFolder();
  void removeFolder();
  void importCheckpoint();
  void onImportDone(const QString& outDir, const QString& problem);

  ModelLocations* locations_;
  std::vector<kvs::ModelSummary> models_;
  QTableWidget* table_;
  QLabel* status_;
  QProgressDialog* progress_ = nullptr;
  std::thread import_thread_;
  std::atomic<bool> importing_{false};
};

}  // namespace kvs::ui
