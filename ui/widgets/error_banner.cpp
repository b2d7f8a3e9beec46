#include "ui/widgets/error_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QToolButton>

namespace kvs::ui {

ErrorBanner::ErrorBanner(QWidget* parent) : QWidget(parent), text_(new QLabel(this)), hide_timer_(new QTimer(this)) {
  setObjectName(QStringLiteral("errorBanner"));
  setAttribute(Qt::WA_StyledBackground);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 6, 6, 6);
  text_->setWordWrap(true);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* close = new QToolButton(this);
  close->setText(QStringLiteral("✕"));
  close->setAutoRaise(true);
  close->setToolTip(tr("Dismiss"));
  connect(close, &QToolButton::clicked, this, &QWidget::hide);
  layout->addWidget(text_, 1);
  layout->addWidget(close);
  hide_timer_->setSingleShot(true);
  connect(hide_timer_, &QTimer::timeout, this, &QWidget::hide);
  hide();
}

void ErrorBanner::showMessage(const QString& message, Kind kind) {
  text_->setText(message);
  setStyleSheet(
      kind == Kind::Error
          ? QStringLiteral("#errorBanner{background:#5a1d1d;border-bottom:1px solid #f85149} QLabel{color:#ffdcd7}")
          : QStringLiteral("#errorBanner{background:#1d3b5a;border-bottom:1px solid #58a6ff} QLabel{color:#cae8ff}"));
  show();
  if (kind == Kind::Notice) hide_timer_->start(6000);
  else hide_timer_->stop();
}

QString ErrorBanner::message() const { return isVisible() ? text_->text() : QString(); }

}  // namespace kvs::ui
