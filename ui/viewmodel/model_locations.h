#pragma once
// Where the window looks for model bundles: the bundled demo, a standard
// per-user data folder (QStandardPaths::AppLocalDataLocation/models, where
// imports go), and folders added in the model manager (persisted in QSettings).
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

class QSettings;

namespace kvs::ui {

struct ModelLocations {
  QString bundledDemo;  // a bundle folder
  QString userModels;   // a folder of bundles
  QStringList extraFolders;

  std::vector<std::string> folders() const;          // search order: demo, user, extra
  QString originOf(const QString& bundleDir) const;  // "bundled demo", "user models", "added folder"

  static QString defaultUserModels();
  static ModelLocations load(QSettings& settings, const QString& bundledDemo);
  void save(QSettings& settings) const;
};

}  // namespace kvs::ui
