#pragma once
// The history tab: this session's images as a gallery, the selected one large
// with its parameters, and Recall / Save PNG / Open PNG.
#include <QWidget>

class QLabel;
class QListView;

namespace kvs::ui {

class HistoryModel;
class ImageView;

class HistoryGallery : public QWidget {
  Q_OBJECT

 public:
  HistoryGallery(HistoryModel* model, QWidget* parent = nullptr);
  int currentRow() const;  // -1: none selected
  void selectRow(int row);

 Q_SIGNALS:
  void recallRequested(int row);
  void saveRequested(int row);
  void openRequested();

 private:
  void showCurrent();

  HistoryModel* model_;
  QListView* list_;
  ImageView* large_;
  QLabel* details_;
};

}  // namespace kvs::ui
