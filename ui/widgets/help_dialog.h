#pragma once
// Help: keyboard shortcuts and what the overlays mean.
#include <QDialog>

namespace kvs::ui {

class HelpDialog : public QDialog {
  Q_OBJECT
 public:
  explicit HelpDialog(QWidget* parent = nullptr);
};

}  // namespace kvs::ui
