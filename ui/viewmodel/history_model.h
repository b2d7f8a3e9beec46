#pragma once
// The images, newest first, each with how it was made: a list model for the
// gallery. With the per-user gallery open (engine/gallery), every image is kept
// there as it arrives (a PNG with the CLI's metadata chunks and a database row),
// so the history survives a restart; without one it holds this session's
// images. Saves an entry as a PNG (engine/session/generation_metadata.h),
// recalls parameters from entries, searches, deletes and exports them.
#include <QAbstractListModel>
#include <QDateTime>
#include <QImage>
#include <QStringList>
#include <QVector>

#include <memory>
#include <vector>

#include "ui/bridge/engine_types.h"

namespace kvs {
class GalleryStore;
}

namespace kvs::ui {

struct HistoryEntry {
  QImage image;
  kvs::GenerationRequest request;  // the whole batch's request
  ResultPtr result;
  int index = 0;                        // image within the batch
  QString className;                    // a text model's image: its prompt's first words
  std::vector<std::string> classNames;  // the model's names, for the metadata
  QDateTime created;
  QString source;         // "generated", "compare", "gallery", or the PNG it was opened from
  int64_t galleryId = 0;  // its row in the per-user gallery (0: not kept there)
  QString pngPath;        // the gallery's PNG of it ("" when not kept)

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
  ~HistoryModel() override;

  // Keeps the images in the per-user gallery in `galleryDir`
  // (engine/gallery/gallery_location.h): its newest entries are shown now and
  // every image added from now on is written there. `version` goes into the
  // PNGs' metadata. Returns "" or why the gallery cannot be used (the history
  // then lives in memory, as without one).
  QString openGallery(const QString& galleryDir, const QString& version);
  bool hasGallery() const { return gallery_ != nullptr; }
  QString galleryDir() const { return gallery_dir_; }
  // Shows the entries whose prompt, class, model or policy contains `text`
  // (case-insensitive; "" shows all), newest first: the gallery's, else this
  // session's.
  void setSearch(const QString& text);
  QString search() const { return search_; }
  // Deletes the rows (from the gallery too, with their PNGs). Throws kvs::Error.
  void removeRows(QList<int> rows);
  // Copies the rows' images into `folder` as PNGs with their metadata; returns
  // the files written. Throws kvs::Error.
  QStringList exportRows(const QList<int>& rows, const QString& folder) const;

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;

  // Adds every image of a finished generation (newest first).
  // `family`: the model's (FamilyDescription::name), recorded in the gallery.
  void addResult(const kvs::GenerationRequest& request, const ResultPtr& result,
                 const std::vector<std::string>& classNames, const QString& source = QStringLiteral("generated"),
                 const std::string& family = std::string());
  // Adds an image opened from a PNG (its request recalled from the metadata).
  void addRecalled(const QImage& image, const kvs::GenerationRequest& request, const QString& className,
                   const QString& path);
  const HistoryEntry& entry(int row) const { return entries_.at(row); }
  int size() const { return entries_.size(); }

  // Writes entry `row` as a PNG with metadata; throws kvs::Error (FileError, ...).
  void savePng(int row, const QString& path, const QString& version) const;

 Q_SIGNALS:
  // Writing an image to the gallery failed (a full disk, a folder made
  // read-only): the image stays in this session's history.
  void galleryProblem(const QString& message);

 private:
  void reloadFromGallery();
  bool matchesSearch(const HistoryEntry& entry) const;

  QVector<HistoryEntry> entries_;
  // Without a gallery: every image of this session, of which entries_ shows
  // those the search matches.
  QVector<HistoryEntry> session_;
  std::unique_ptr<kvs::GalleryStore> gallery_;
  QString gallery_dir_, version_, search_;
};

}  // namespace kvs::ui
