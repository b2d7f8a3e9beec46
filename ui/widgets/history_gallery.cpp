#include "ui/widgets/history_gallery.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

#include "ui/viewmodel/history_model.h"
#include "ui/widgets/image_view.h"
#include "ui/widgets/split_view.h"

namespace kvs::ui {

HistoryGallery::HistoryGallery(HistoryModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QHBoxLayout(this);
  auto* left = new QVBoxLayout;
  search_ = new QLineEdit(this);
  search_->setObjectName(QStringLiteral("gallerySearch"));
  search_->setPlaceholderText(tr("search prompts, classes, models, policies…"));
  search_->setClearButtonEnabled(true);
  search_->setToolTip(tr("Shows the images whose prompt, class, model or policy contains this text"));
  left->addWidget(search_);
  list_ = new QListView(this);
  list_->setModel(model_);
  list_->setViewMode(QListView::IconMode);
  list_->setIconSize(QSize(128, 128));
  list_->setGridSize(QSize(156, 190));
  list_->setResizeMode(QListView::Adjust);
  list_->setMovement(QListView::Static);
  list_->setWordWrap(true);
  list_->setUniformItemSizes(true);
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  left->addWidget(list_, 1);
  layout->addLayout(left, 3);

  auto* side = new QVBoxLayout;
  large_ = new ImageView(this);
  large_->setMinimumSize(256, 256);
  side->addWidget(large_, 1);
  details_ = new QLabel(tr("Generated images appear here. Open a PNG made by KV Studio to recall how it was made."),
                        this);
  details_->setWordWrap(true);
  details_->setTextFormat(Qt::RichText);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  side->addWidget(details_);
  auto* buttons = new QHBoxLayout;
  auto* recall = new QPushButton(tr("Recall parameters"), this);
  recall->setToolTip(tr("Put this image's class, seed, sampling and policy back into the Generate tab (Ctrl+R)"));
  auto* save = new QPushButton(tr("Save PNG…"), this);
  save->setToolTip(tr("Save with the parameters in the PNG's metadata (Ctrl+S)"));
  auto* open = new QPushButton(tr("Open PNG…"), this);
  open->setToolTip(tr("Open a PNG made by KV Studio and recall its parameters (Ctrl+O)"));
  buttons->addWidget(recall);
  buttons->addWidget(save);
  buttons->addWidget(open);
  side->addLayout(buttons);
  auto* more = new QHBoxLayout;
  auto* remove = new QPushButton(tr("Delete…"), this);
  remove->setObjectName(QStringLiteral("galleryDelete"));
  remove->setToolTip(tr("Delete the selected images from the gallery, their PNG files with them"));
  auto* exporter = new QPushButton(tr("Export…"), this);
  exporter->setObjectName(QStringLiteral("galleryExport"));
  exporter->setToolTip(tr("Copy the selected images into a folder, as PNGs with their parameters"));
  more->addWidget(remove);
  more->addWidget(exporter);
  more->addStretch(1);
  side->addLayout(more);
  layout->addLayout(side, 2);

  connect(recall, &QPushButton::clicked, this, [this] {
    if (currentRow() >= 0) Q_EMIT recallRequested(currentRow());
  });
  connect(save, &QPushButton::clicked, this, [this] { Q_EMIT saveRequested(currentRow() >= 0 ? currentRow() : 0); });
  connect(open, &QPushButton::clicked, this, &HistoryGallery::openRequested);
  connect(remove, &QPushButton::clicked, this, [this] {
    if (!selectedRows().isEmpty()) Q_EMIT deleteRequested(selectedRows());
  });
  connect(exporter, &QPushButton::clicked, this, [this] {
    if (!selectedRows().isEmpty()) Q_EMIT exportRequested(selectedRows());
  });
  connect(search_, &QLineEdit::textChanged, model_, &HistoryModel::setSearch);
  connect(list_, &QListView::doubleClicked, this, [this](const QModelIndex& i) { Q_EMIT recallRequested(i.row()); });
  connect(list_->selectionModel(), &QItemSelectionModel::currentChanged, this, &HistoryGallery::showCurrent);
  connect(model_, &QAbstractItemModel::rowsInserted, this, [this] {
    if (currentRow() < 0 || currentRow() == 0) selectRow(0);
  });
}

int HistoryGallery::currentRow() const {
  const QModelIndex i = list_->currentIndex();
  return i.isValid() ? i.row() : -1;
}

QList<int> HistoryGallery::selectedRows() const {
  QList<int> rows;
  for (const QModelIndex& i : list_->selectionModel()->selectedIndexes()) rows << i.row();
  if (rows.isEmpty() && currentRow() >= 0) rows << currentRow();
  std::sort(rows.begin(), rows.end());
  return rows;
}

void HistoryGallery::selectRow(int row) {
  if (row < 0 || row >= model_->rowCount()) return;
  list_->setCurrentIndex(model_->index(row));
  showCurrent();
}

void HistoryGallery::showCurrent() {
  const int row = currentRow();
  if (row < 0 || row >= model_->size()) return;
  const HistoryEntry& e = model_->entry(row);
  large_->setImage(e.image, e.className);
  details_->setText(e.tooltip());
}

}  // namespace kvs::ui
