#pragma once
// `kvstudio --run-once`: drives the real window through the same actions a
// person clicks (Generate, or Compare), waits for the end, saves a screenshot of
// the whole window and a JSON summary next to it (canvas not blank, gauges
// moved, compare table), then quits with 0 on success. Used by the end-to-end
// test and to make the README screenshots.
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QStringList>

namespace kvs::ui {
class MainWindow;
}

namespace kvs::gui {

struct RunOnceOptions {
  QString screenshot;    // PNG of the whole window (required)
  QString summary;       // JSON (default: the screenshot path with .json)
  QString policy;        // policy spec for Generate
  QStringList compare;   // specs: run a comparison instead
  QString switchPolicy;  // change to this spec while running…
  int switchAtLine = 4;  // …after this line (1-based)
  int captureLine = 0;   // > 0: take the screenshot when this line arrives (mid-run)
  bool debugOverlay = false;
  bool differences = false;  // compare: show difference heatmaps
  int tab = -1;              // >= 0: show this tab for the screenshot (0 Generate, 1 Compare, 2 History)
  int timeoutSeconds = 300;
};

class RunOnce : public QObject {
  Q_OBJECT

 public:
  RunOnce(kvs::ui::MainWindow* window, RunOnceOptions options, QObject* parent = nullptr);
  void start();

 private:
  void onUnit();
  void finish(bool ok, const QString& message);
  bool capture();
  QJsonObject summary(bool ok, const QString& message) const;

  kvs::ui::MainWindow* window_;
  RunOnceOptions options_;
  bool switched_ = false, captured_ = false, done_ = false;
  double canvas_stddev_ = 0;
  bool canvas_nonblank_ = false;
};

}  // namespace kvs::gui
