#pragma once
// The model manager: every bundle found (bundled demo, per-user models folder,
// added folders) with architecture, size and KV bytes per token; broken bundles
// listed with what is wrong; import an official LlamaGen checkpoint through the
// converter on a background thread with a progress dialog.
#include <QDialog>

#include <atomic>
#include <map>
#include <string>
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

  // Converts in the background with `family`'s converter (ModelFamily::convert,
  // `options` as on the command line) into `out`, then lists it; what the
  // import form starts, and what tests drive without the form.
  void startImport(const std::string& family, const std::map<std::string, std::string>& options, const QString& what,
                   const QString& out);
  bool importing() const { return importing_; }
  // The import form (modal; what the Import button opens): the family, the
  // files it converts from, a name and the weights' precision; OK starts the import.
  void importCheckpoint();

 Q_SIGNALS:
  void modelChosen(const QString& dir);
  void locationsChanged();
  void error(const QString& message);

 private:
  void useSelected();
  void addFolder();
  void removeFolder();
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
