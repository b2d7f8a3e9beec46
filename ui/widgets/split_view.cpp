#include "ui/widgets/split_view.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

#include "ui/widgets/image_view.h"

namespace kvs::ui {

SplitView::SplitView(QWidget* parent) : QWidget(parent) {
  setCursor(Qt::SplitHCursor);
  setToolTip(tr("Drag to move the divider: A on the left, B on the right"));
}

void SplitView::setImages(const QImage& a, const QString& labelA, const QImage& b, const QString& labelB) {
  a_ = a;
  b_ = b;
  label_a_ = labelA;
  label_b_ = labelB;
  update();
}

void SplitView::setSplit(double fraction) {
  split_ = std::clamp(fraction, 0.0, 1.0);
  Q_EMIT splitChanged(split_);
  update();
}

void SplitView::flip() {
  std::swap(a_, b_);
  std::swap(label_a_, label_b_);
  update();
}

QRect SplitView::imageRect() const {
  const QRect area = rect().adjusted(4, 4, -4, -4 - fontMetrics().height() - 4);
  return fitImageRect(area, a_.isNull() ? b_.size() : a_.size());
}

void SplitView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(21, 23, 28));
  const QRect r = imageRect();
  if (a_.isNull() || b_.isNull()) {
    p.setPen(QColor(120, 126, 140));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("Run a comparison to compare two results in place"));
    return;
  }
  const int x = r.left() + static_cast<int>(r.width() * split_);
  p.save();
  p.setClipRect(QRect(r.left(), r.top(), x - r.left(), r.height()));
  drawScaledImage(p, r, a_);
  p.restore();
  p.save();
  p.setClipRect(QRect(x, r.top(), r.right() - x + 1, r.height()));
  drawScaledImage(p, r, b_);
  p.restore();
  p.setPen(QPen(QColor(255, 214, 64), 2));
  p.drawLine(x, r.top(), x, r.bottom());
  p.setBrush(QColor(255, 214, 64));
  p.drawEllipse(QPoint(x, r.center().y()), 5, 5);
  p.setPen(QColor(190, 195, 206));
  const QRect captions(4, r.bottom() + 4, width() - 8, fontMetrics().height());
  p.drawText(captions, Qt::AlignLeft, QStringLiteral("A: ") + label_a_);
  p.drawText(captions, Qt::AlignRight, QStringLiteral("B: ") + label_b_);
}

void SplitView::mousePressEvent(QMouseEvent* event) { mouseMoveEvent(event); }

void SplitView::mouseMoveEvent(QMouseEvent* event) {
  const QRect r = imageRect();
  if (r.width() <= 0) return;
  setSplit((event->position().x() - r.left()) / static_cast<double>(r.width()));
}

}  // namespace kvs::ui
