#include "ui/viewmodel/history_model.h"

#include <QIcon>
#include <QPixmap>

#include "engine/core/errors.h"
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
                             const std::vector<std::string>& classNames, const QString& source) {
  if (!result) return;
  const int n = static_cast<int>(result->images.size());
  beginInsertRows(QModelIndex(), 0, n - 1);
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
    entries_.prepend(e);
  }
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
