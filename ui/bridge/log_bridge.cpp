#include "ui/bridge/log_bridge.h"

#include <QMetaObject>
#include <QPointer>

#include "engine/core/logging.h"

namespace kvs::ui {

LogBridge::LogBridge(QObject* parent) : QObject(parent) {
  qRegisterMetaType<kvs::ui::LogBridge::Level>();
  listener_ = kvs::add_log_listener([this](kvs::LogLevel level, const std::string& module, const std::string& message) {
    Level l = Info;
    switch (level) {
      case kvs::LogLevel::Trace: l = Trace; break;
      case kvs::LogLevel::Debug: l = Debug; break;
      case kvs::LogLevel::Info: l = Info; break;
      case kvs::LogLevel::Warn: l = Warn; break;
      case kvs::LogLevel::Error: l = Error; break;
      case kvs::LogLevel::Off: return;
    }
    const QString m = QString::fromStdString(module), text = QString::fromStdString(message);
    QMetaObject::invokeMethod(
        this, [this, l, m, text] { Q_EMIT line(l, m, text); }, Qt::QueuedConnection);
  });
}

LogBridge::~LogBridge() { kvs::remove_log_listener(listener_); }

}  // namespace kvs::ui
