#include "ui/viewmodel/model_locations.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>

namespace kvs::ui {

std::vector<std::string> ModelLocations::folders() const {
  std::vector<std::string> out;
  if (!bundledDemo.isEmpty()) out.push_back(bundledDemo.toStdString());
  if (!userModels.isEmpty()) out.push_back(userModels.toStdString());
  for (const QString& f : extraFolders) out.push_back(f.toStdString());
  return out;
}

QString ModelLocations::originOf(const QString& bundleDir) const {
  const QString canonical = QFileInfo(bundleDir).canonicalFilePath();
  if (!bundledDemo.isEmpty() && canonical == QFileInfo(bundledDemo).canonicalFilePath())
    return QStringLiteral("bundled demo");
  auto inside = [&](const QString& folder) {
    const QString f = QFileInfo(folder).canonicalFilePath();
    return !f.isEmpty() && (canonical == f || canonical.startsWith(f + QLatin1Char('/')));
  };
  if (inside(userModels)) return QStringLiteral("user models");
  return QStringLiteral("added folder");
}

QString ModelLocations::defaultUserModels() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation))
      .filePath(QStringLiteral("models"));
}

ModelLocations ModelLocations::load(QSettings& settings, const QString& bundledDemo) {
  ModelLocations l;
  l.bundledDemo = bundledDemo;
  l.userModels = settings.value(QStringLiteral("models/userFolder"), defaultUserModels()).toString();
  l.extraFolders = settings.value(QStringLiteral("models/extraFolders")).toStringList();
  return l;
}

void ModelLocations::save(QSettings& settings) const {
  settings.setValue(QStringLiteral("models/userFolder"), userModels);
  settings.setValue(QStringLiteral("models/extraFolders"), extraFolders);
}

}  // namespace kvs::ui
