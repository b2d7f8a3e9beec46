#pragma once
// A scaled image with a caption (the compare view's panes, the history's
// thumbnails), and the two drawing helpers the image widgets share.
#include <QImage>
#include <QRect>
#include <QString>
#include <QWidget>

class QPainter;

namespace kvs::ui {

// The largest rectangle of `image`'s aspect inside `area`, centred.
QRect fitImageRect(const QRect& area, const QSize& image);
// Draws `image` into `target`, smoothing only when it is not enlarged much.
void drawScaledImage(QPainter& p, const QRect& target, const QImage& image);

class ImageView : public QWidget {
  Q_OBJECT
 public:
  explicit ImageView(QWidget* parent = nullptr);
  void setImage(const QImage& image, const QString& caption = {});
  QSize sizeHint() const override { return {220, 220}; }
  QSize minimumSizeHint() const override { return {80, 80}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QImage image_;
  QString caption_;
};

}  // namespace kvs::ui
