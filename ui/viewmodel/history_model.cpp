#include "ui/viewmodel/history_model.h"

#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QPixmap>

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/gallery/gallery_location.h"
#include "engine/gallery/gallery_store.h"
#include "engine/image/png_file.h"
#include "engine/session/generation_metadata.h"
#include "ui/viewmodel/run_view_model.h"

namespace kvs::ui {

int64_t HistoryEntry::classId() const {
  if (request.is_text()) return -1;
  if (index >= 0 && index < static_cast<int>(request.class_ids.size()))
    return request.class_ids[static_cast<size_t>(index)];
  return request.class_ids.empty() ? 0 : request.class_ids.front();
}

kvs::GenerationRequest HistoryEntry::singleImageRequest() const {
  kvs::GenerationRequest r = request;
  if (r.is_text()) r.images = 1;
  else r.class_ids = {classId()};
  return r;
}

QString HistoryEntry::summary() const {
  return QStringLiteral("%1 · seed %2\n%3")
      .arg(className)
      .arg(request.seed)
      .arg(QString::fromStdString(result ? result->policy : request.policy.text()));
}

QString promptTitle(const std::string& prompt) {
  QString line = QString::fromStdString(prompt).simplified();
  if (line.size() > 48) line = line.left(47) + QChar(0x2026);
  return line;
}

QString HistoryEntry::tooltip() const {
  const QString what =
      request.is_text()
          ? QString::fromStdString(request.prompt).toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>")) +
                (request.negative_prompt.empty() ? QString()
                                                 : QStringLiteral("<br><i>Negative prompt:</i> ") +
                                                       QString::fromStdString(request.negative_prompt).toHtmlEscaped())
          : className.toHtmlEscaped();
  QString t = QStringLiteral("<b>%1</b><br>seed %2, CFG %3, temperature %4, top-k %5, top-p %6<br>policy %7")
                  .arg(what)
                  .arg(request.seed)
                  .arg(request.cfg_scale)
                  .arg(request.sampling.temperature)
                  .arg(request.sampling.top_k)
                  .arg(request.sampling.top_p)
                  .arg(QString::fromStdString(result ? result->policy : request.policy.text()).toHtmlEscaped());
  if (result)
    t += QStringLiteral("<br>%1 · %2 tok/s · KV %3 of %4 MiB")
             .arg(QString::fromStdString(result->model_name).toHtmlEscaped())
             .arg(result->tokens_per_second, 0, 'f', 1)
             .arg(result->kv_bytes_logical_final / 1048576.0, 0, 'f', 2)
             .arg(result->kv_bytes_full / 1048576.0, 0, 'f', 2);
  t += QStringLiteral("<br><i>%1, %2</i>").arg(source.toHtmlEscaped(), created.toString(QStringLiteral("HH:mm:ss")));
  return t;
}

HistoryModel::HistoryModel(QObject* parent) : QAbstractListModel(parent) {}

HistoryModel::~HistoryModel() = default;

QString HistoryModel::openGallery(const QString& galleryDir, const QString& version) {
  try {
    auto store = std::make_unique<kvs::GalleryStore>(
        kvs::GalleryStore::open(kvs::gallery_database_path(galleryDir.toStdString())));
    gallery_ = std::move(store);
  } catch (const kvs::Error& e) {
    gallery_.reset();
    return QString::fromStdString(e.what());
  }
  gallery_dir_ = galleryDir;
  version_ = version;
  session_.clear();
  reloadFromGallery();
  return {};
}

// The newest kMaxEntries entries the search matches, each read back from its
// PNG (image and request); an entry whose PNG is gone or unreadable is skipped
// (the gallery still lists it: `kvstudio-cli gallery list`).
void HistoryModel::reloadFromGallery() {
  kvs::GalleryQuery query;
  query.text = search_.trimmed().toStdString();
  query.limit = kMaxEntries;
  std::vector<kvs::GalleryEntry> rows;
  try {
    rows = gallery_->search(query);
  } catch (const kvs::Error& e) {
    Q_EMIT galleryProblem(QString::fromStdString(e.what()));
  }
  QVector<HistoryEntry> loaded;
  for (const kvs::GalleryEntry& row : rows) {
    try {
      const kvs::RecalledImage png = kvs::read_generation_png(row.png_path);
      HistoryEntry e;
      e.image = RunViewModel::toQImage(png.image);
      e.request = png.request;
      e.className = png.request.is_text() ? promptTitle(png.request.prompt) : QString::fromStdString(png.class_name);
      e.created = QDateTime::fromString(QString::fromStdString(row.created), Qt::ISODate).toLocalTime();
      e.source = QStringLiteral("gallery");
      e.galleryId = row.id;
      e.pngPath = QString::fromStdString(row.png_path);
      loaded.push_back(std::move(e));
    } catch (const kvs::Error&) {
      continue;
    }
  }
  beginResetModel();
  entries_ = std::move(loaded);
  endResetModel();
}

bool HistoryModel::matchesSearch(const HistoryEntry& e) const {
  const QString text = search_.trimmed();
  if (text.isEmpty()) return true;
  const QString policy = QString::fromStdString(e.result ? e.result->policy : e.request.policy.text());
  const QString model = QString::fromStdString(e.result ? e.result->model_name : e.request.model_path);
  for (const QString& field : {QString::fromStdString(e.request.prompt), e.className, model, policy})
    if (field.contains(text, Qt::CaseInsensitive)) return true;
  return false;
}

void HistoryModel::setSearch(const QString& text) {
  search_ = text;
  if (gallery_) {
    reloadFromGallery();
    return;
  }
  beginResetModel();
  entries_.clear();
  for (const HistoryEntry& e : session_)
    if (matchesSearch(e)) entries_.push_back(e);
  endResetModel();
}

void HistoryModel::removeRows(QList<int> rows) {
  std::sort(rows.begin(), rows.end(), std::greater<int>());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  for (const int row : rows) {
    if (row < 0 || row >= entries_.size()) continue;
    const HistoryEntry e = entries_.at(row);
    // The gallery first: a row that cannot be deleted stays on screen.
    if (gallery_ && e.galleryId > 0) gallery_->remove(e.galleryId, /*delete_png=*/true);
    beginRemoveRows(QModelIndex(), row, row);
    entries_.removeAt(row);
    endRemoveRows();
    for (int i = 0; i < session_.size(); ++i)
      if (session_[i].created == e.created && session_[i].image.cacheKey() == e.image.cacheKey()) {
        session_.removeAt(i);
        break;
      }
  }
}

QStringList HistoryModel::exportRows(const QList<int>& rows, const QString& folder) const {
  QStringList written;
  if (!QDir().mkpath(folder)) throw kvs::FileError("folder " + folder.toStdString() + " cannot be created");
  for (const int row : rows) {
    if (row < 0 || row >= entries_.size()) continue;
    const HistoryEntry& e = entries_.at(row);
    const QString stem = e.request.is_text() ? QStringLiteral("kvstudio_prompt_s%1").arg(e.request.seed)
                                             : QStringLiteral("kvstudio_c%1_s%2").arg(e.classId()).arg(e.request.seed);
    QString path = QDir(folder).filePath(stem + QStringLiteral(".png"));
    for (int n = 2; QFileInfo::exists(path); ++n) path = QDir(folder).filePath(stem + QStringLiteral("_%1.png").arg(n));
    if (e.result) {
      savePng(row, path, version_.isEmpty() ? QStringLiteral("dev") : version_);
    } else {
      const QString from = !e.pngPath.isEmpty() ? e.pngPath : e.source;
      if (!QFile::copy(from, path))
        throw kvs::FileError("cannot copy " + from.toStdString() + " to " + path.toStdString());
    }
    written << path;
  }
  return written;
}

int HistoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : entries_.size(); }

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= entries_.size()) return {};
  const HistoryEntry& e = entries_.at(index.row());
  switch (role) {
    case Qt::DisplayRole: return e.summary();
    case Qt::ToolTipRole: return e.tooltip();
    case Qt::DecorationRole:
      return QIcon(QPixmap::fromImage(
          e.image.scaled(128, 128, Qt::KeepAspectRatio,
                         e.image.width() < 128 ? Qt::FastTransformation : Qt::SmoothTransformation)));
    default: return {};
  }
}

void HistoryModel::addResult(const kvs::GenerationRequest& request, const ResultPtr& result,
                             const std::vector<std::string>& classNames, const QString& source,
                             const std::string& family) {
  if (!result) return;
  const int n = static_cast<int>(result->images.size());
  QVector<HistoryEntry> added;
  for (int i = n - 1; i >= 0; --i) {
    HistoryEntry e;
    e.image = RunViewModel::toQImage(result->images[static_cast<size_t>(i)]);
    e.request = request;
    e.result = result;
    e.index = i;
    e.classNames = classNames;
    e.className = request.is_text() ? promptTitle(request.prompt)
                                    : QString::fromStdString(kvs::class_display_name(e.classId(), classNames));
    e.created = QDateTime::currentDateTime();
    e.source = source;
    added.push_back(e);
  }
  // Into the gallery first (oldest of the batch first, so that the newest is on top there too).
  if (gallery_) {
    try {
      for (HistoryEntry& e : added) {
        const std::string stem = request.is_text()
                                     ? "prompt_s" + std::to_string(request.seed)
                                     : "c" + std::to_string(e.classId()) + "_s" + std::to_string(request.seed);
        const std::string png = kvs::new_gallery_image_path(gallery_dir_.toStdString(), stem);
        const size_t index = static_cast<size_t>(e.index);
        kvs::write_png(png, result->images.at(index),
                       kvs::generation_png_chunks(request, *result, index, classNames, version_.toStdString()));
        kvs::GalleryEntry row = kvs::gallery_entry(request, *result, index, classNames, png,
                                                   source == QStringLiteral("generated") ? "window"
                                                                                         : source.toStdString());
        row.family = family;
        e.galleryId = gallery_->add(row);
        e.pngPath = QString::fromStdString(png);
      }
    } catch (const kvs::Error& err) {
      Q_EMIT galleryProblem(QString::fromStdString(err.what()));
    }
  } else {
    for (const HistoryEntry& e : added) session_.prepend(e);
    if (session_.size() > kMaxEntries) session_.resize(kMaxEntries);
  }
  QVector<HistoryEntry> shown;
  for (const HistoryEntry& e : added)
    if (matchesSearch(e)) shown.push_back(e);
  if (shown.isEmpty()) return;
  beginInsertRows(QModelIndex(), 0, static_cast<int>(shown.size()) - 1);
  for (const HistoryEntry& e : shown) entries_.prepend(e);
  endInsertRows();
  if (entries_.size() > kMaxEntries) {
    beginRemoveRows(QModelIndex(), kMaxEntries, entries_.size() - 1);
    entries_.resize(kMaxEntries);
    endRemoveRows();
  }
}

void HistoryModel::addRecalled(const QImage& image, const kvs::GenerationRequest& request, const QString& className,
                               const QString& path) {
  beginInsertRows(QModelIndex(), 0, 0);
  HistoryEntry e;
  e.image = image;
  e.request = request;
  e.className = request.is_text() && className.isEmpty() ? promptTitle(request.prompt) : className;
  e.created = QDateTime::currentDateTime();
  e.source = path;
  entries_.prepend(e);
  endInsertRows();
  if (!gallery_) session_.prepend(e);
}

void HistoryModel::savePng(int row, const QString& path, const QString& version) const {
  if (row < 0 || row >= entries_.size()) throw kvs::InvalidArgumentError("no image selected");
  const HistoryEntry& e = entries_.at(row);
  if (!e.result)
    throw kvs::InvalidArgumentError("this image was opened from " + e.source.toStdString() +
                                    "; it is already a PNG file");
  kvs::write_png(path.toStdString(), e.result->images.at(static_cast<size_t>(e.index)),
                 kvs::generation_png_chunks(e.request, *e.result, static_cast<size_t>(e.index), e.classNames,
                                            version.toStdString()));
}

}  // namespace kvs::ui
