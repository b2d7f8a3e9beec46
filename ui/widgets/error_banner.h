#pragma once
// A non-modal banner across the top of the window for errors and notices: it
// never blocks, and closes on click or after a while (errors stay until closed).
#include <QWidget>

class QLabel;
class QTimer;

namespace kvs::ui {

class ErrorBanner : public QWidget {
  Q_OBJECT

 public:
  enum class Kind { Error, Notice };
  explicit ErrorBanner(QWidget* parent = nullptr);
  void showMessage(const QString& message, Kind kind = Kind::Error);
  QString message() const;

 private:
  QLabel* text_;
  QTimer* hide_timer_;
};

}  // namespace kvs::ui
