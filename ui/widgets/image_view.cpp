#include "ui/widgets/image_view.h"

#include <QPainter>

namespace kvs::ui {

QRect fitImageRect(const QRect& area, const QSize& image) {
  if (image.isEmpty()) return area;
  QSize s = image.scaled(area.size(), Qt::KeepAspectRatio);
  return QRect(area.left() + (area.width() - s.width()) / 2, area.top() + (area.height() - s.height()) / 2, s.width(),
               s.height());
}

void drawScaledImage(QPainter& p, const QRect& target, const QImage& image) {
  p.setRenderHint(QPainter::SmoothPixmapTransform, target.width() < 2 * image.width());
  p.drawImage(target, image);
}

ImageView::ImageView(QWidget* parent) : QWidget(parent) {}

void ImageView::setImage(const QImage& image, const QString& caption) {
  image_ = image;
  caption_ = caption;
  update();
}

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(21, 23, 28));
  const int captionHeight = caption_.isEmpty() ? 0 : fontMetrics().height() + 4;
  const QRect area = rect().adjusted(4, 4, -4, -4 - captionHeight);
  if (image_.isNull()) {
    p.setPen(QColor(120, 126, 140));
    p.drawText(area, Qt::AlignCenter, tr("—"));
  } else {
    drawScaledImage(p, fitImageRect(area, image_.size()), image_);
  }
  if (captionHeight) {
    p.setPen(QColor(190, 195, 206));
    p.drawText(QRect(0, height() - captionHeight, width(), captionHeight), Qt::AlignCenter, caption_);
  }
}

}  // namespace kvs::ui
