#pragma once
// The history tab: the gallery's images (kept across restarts when the
// per-user gallery is open), searchable by prompt, class, model or policy; the
// selected one large with its parameters; Recall / Save PNG / Open PNG, and
// Delete / Export for the selected images.
#include <QWidget>

class QLabel;
class QLineEdit;
class QListView;

namespace kvs::ui {

class HistoryModel;
class ImageView;

class HistoryGallery : public QWidget {
  Q_OBJECT

 public:
  HistoryGallery(HistoryModel* model, QWidget* parent = nullptr);
  int currentRow() const;           // -1: none selected
  QList<int> selectedRows() const;  // ascending; the current row when nothing else is selected
  void selectRow(int row);
  QLineEdit* searchBox() const { return search_; }

 Q_SIGNALS:
  void recallRequested(int row);
  void saveRequested(int row);
  void openRequested();
  void deleteRequested(const QList<int>& rows);
  void exportRequested(const QList<int>& rows);

 private:
  void showCurrent();

  HistoryModel* model_;
  QLineEdit* search_;
  QListView* list_;
  ImageView* large_;
  QLabel* details_;
};

}  // namespace kvs::ui
