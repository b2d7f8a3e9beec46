#pragma once
// The log of this session: every engine and window log line (spdlog, all
// modules), newest last, errors in red. Bounded.
#include <QPlainTextEdit>

#include "ui/bridge/log_bridge.h"

namespace kvs::ui {

class LogPanel : public QPlainTextEdit {
  Q_OBJECT

 public:
  explicit LogPanel(QWidget* parent = nullptr);
  void append(kvs::ui::LogBridge::Level level, const QString& module, const QString& message);
};

}  // namespace kvs::ui
