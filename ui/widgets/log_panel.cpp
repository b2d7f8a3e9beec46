#include "ui/widgets/log_panel.h"

#include <QDateTime>

#include <algorithm>

namespace kvs::ui {

LogPanel::LogPanel(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setMaximumBlockCount(2000);
  setObjectName(QStringLiteral("logPanel"));
  QFont f(QStringLiteral("monospace"));
  f.setStyleHint(QFont::Monospace);
  f.setPointSizeF(font().pointSizeF() * 0.9);
  setFont(f);
}

void LogPanel::append(LogBridge::Level level, const QString& module, const QString& message) {
  static const char* names[] = {"trace", "debug", "info", "warn", "error"};
  const char* color = level >= LogBridge::Error ? "#f85149" : level == LogBridge::Warn ? "#d29922" : "#8b949e";
  appendHtml(QStringLiteral("<span style='color:#6e7681'>%1</span> <span style='color:#58a6ff'>[%2]</span> "
                            "<span style='color:%3'>%4</span> %5")
                 .arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), module.toHtmlEscaped(),
                      QString::fromLatin1(color), QString::fromLatin1(names[std::clamp(static_cast<int>(level), 0, 4)]),
                      message.toHtmlEscaped()));
}

}  // namespace kvs::ui
