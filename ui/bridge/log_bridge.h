#pragma once
// Engine and UI log lines (spdlog, every module) as a queued Qt signal for the
// log panel and the error banner. Lines logged on any thread arrive on the GUI
// thread.
#include <QObject>
#include <QString>

namespace kvs::ui {

class LogBridge : public QObject {
  Q_OBJECT

 public:
  enum Level { Trace, Debug, Info, Warn, Error };
  Q_ENUM(Level)

  explicit LogBridge(QObject* parent = nullptr);
  ~LogBridge() override;

 Q_SIGNALS:
  void line(kvs::ui::LogBridge::Level level, const QString& module, const QString& message);

 private:
  int listener_ = 0;
};

}  // namespace kvs::ui
