#pragma once
// Two results in place: image A left of a draggable divider and B right of it
// (a "flip" swaps them), in the compare view.
#include <QImage>
#include <QRect>
#include <QString>
#include <QWidget>

namespace kvs::ui {

class SplitView : public QWidget {
  Q_OBJECT
 public:
  explicit SplitView(QWidget* parent = nullptr);
  void setImages(const QImage& a, const QString& labelA, const QImage& b, const QString& labelB);
  void setSplit(double fraction);  // 0..1, share of the width showing A
  double split() const { return split_; }
  void flip();
  QSize sizeHint() const override { return {260, 260}; }
  QSize minimumSizeHint() const override { return {120, 120}; }

 Q_SIGNALS:
  void splitChanged(double fraction);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  QRect imageRect() const;
  QImage a_, b_;
  QString label_a_, label_b_;
  double split_ = 0.5;
};

}  // namespace kvs::ui
