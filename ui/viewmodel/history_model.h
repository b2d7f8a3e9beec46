#pragma once
// This session's images, newest first, each with how it was made: a list model
// for the gallery. Saves an entry as a PNG with the CLI's metadata chunks
// (engine/session/generation_metadata.h) and recalls parameters from entries.
#include <QAbstractListModel>
#include <QDateTime>
#include <QImage>
#include <QStringList>
#include <QVector>

#include <vector>

#include "ui/bridge/engine_types.h"

namespace kvs::ui {

struct HistoryEntry {
  QImage image;
  kvs::GenerationRequest request;  // the whole batch's request
  ResultPtr result;
  int index = 0;                        // image within the batch
  QString className;                    // a text model's image: its prompt's first words
  std::vector<std::string> classNames;  // the model's names, for the metadata
  QDateTime created;
  QString source;  // "generated", "compare", or the PNG it was opened from

  int64_t classId() const;  // -1 for a text model's image
  // The request that reproduces this one image.
  kvs::GenerationRequest singleImageRequest() const;
  QString summary() const;  // one line for the gallery
  QString tooltip() const;  // all parameters
};

// A prompt as one short line (the gallery's title of a text model's image).
QString promptTitle(const std::string& prompt);

class HistoryModel : public QAbstractListModel {
  Q_OBJECT

 public:
  static constexpr int kMaxEntries = 200;
  explicit HistoryModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;

  // Adds every image of a finished generation (newest first).
  void addResult(const kvs::GenerationRequest& request, const ResultPtr& result,
                 const std::vector<std::string>& classNames, const QString& source = QStringLiteral("generated"));
  // Adds an image opened from a PNG (its request recalled from the metadata).
  void addRecalled(const QImage& image, const kvs::GenerationRequest& request, const QString& className,
                   const QString& path);
  const HistoryEntry& entry(int row) const { return entries_.at(row); }
  int size() const { return entries_.size(); }

  // Writes entry `row` as a PNG with metadata; throws kvs::Error (FileError, ...).
  void savePng(int row, const QString& path, const QString& version) const;

 private:
  QVector<HistoryEntry> entries_;
};

}  // namespace kvs::ui
