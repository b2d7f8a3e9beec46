// The window under a storm of what people do, for a bounded time: generate,
// Esc at a random moment, switch policies and budgets (valid or not, of this
// family or another), run and cancel compares, open another family's model
// mid-run, flip tabs and overlays, close the window mid-run and open a new one,
// and close the model manager while it imports. Asserts that nothing crashes or
// hangs: every cancel is acknowledged (the run goes idle) within a few seconds,
// every generation ends, and after the storm the window still draws an image.
//
// KVSTUDIO_WINDOW_STORM_SECONDS sets the length (default 60); the counts are
// printed for docs/reliability.md.
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>
#include <memory>
#include <random>

#include "tests/ui/window_test_support.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/main_window.h"
#include "ui/widgets/model_manager_dialog.h"

using namespace kvs::ui;

namespace {

struct StormModel {
  QString dir;
  QStringList specs;  // this family's policies, with budgets
};

// Lets the event loop run for `ms` milliseconds (the worker's events arrive).
void spin(int ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
}

// Waits until the window has no run and no compare, at most `ms`.
bool settles(MainWindow* w, int ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms) {
    if (!w->run()->active() && !w->compare()->running()) return true;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
  }
  return false;
}

}  // namespace

class TestWindowStorm : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void aStormOfActionsNeverCrashesOrHangs() {
    const int seconds = qEnvironmentVariableIsSet("KVSTUDIO_WINDOW_STORM_SECONDS")
                            ? qEnvironmentVariableIntValue("KVSTUDIO_WINDOW_STORM_SECONDS")
                            : 60;
    const std::vector<StormModel> models = {
        {QStringLiteral(KVSTUDIO_DEMO_MODEL),
         {"full", "linear:rho=1/4", "headkv:rho=1/4", "streaming:rho=1/6", "h2o:rho=1/4", "rkv:rho=1/3"}},
        {QStringLiteral(KVSTUDIO_VAR_DEMO),
         {"full", "heatkv:budget=0.2", "scalekv:rho=1/2", "amskv", "snapkv:rho=1/4"}},
        {QStringLiteral(KVSTUDIO_MAR_DEMO), {"full", "lazymar", "lazymar:selection=random"}},
    };
    const QStringList refused = {"no-such-policy", "linear:rho=9", "heatkv:budget=-1", ""};
    std::mt19937 rng(20261125);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };

    auto make = [](const QString& dir) {
      auto w = std::make_unique<MainWindow>(test::windowOptions(dir));
      w->show();
      return w;
    };
    size_t current = 0;
    std::unique_ptr<MainWindow> w = make(models[current].dir);
    int generations = 0, finished = 0, failed = 0, cancels = 0, compares = 0, switches = 0, refusals = 0,
        model_switches = 0, closed_mid_run = 0, imports_closed = 0, actions = 0;
    auto watch = [&](MainWindow* window) {
      connect(window, &MainWindow::runFinished, this, [&](bool ok) { ok ? ++finished : ++failed; });
    };
    watch(w.get());

    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < seconds * 1000) {
      ++actions;
      const StormModel& model = models[current];
      switch (pick(9)) {
        case 0:
        case 1: {  // Generate, maybe Esc at a random moment.
          if (w->generate()) ++generations;
          spin(pick(400));
          if (pick(2) == 0) {
            w->cancel();
            ++cancels;
            QVERIFY2(settles(w.get(), 15000), "a cancel was not acknowledged within 15 s");
          }
          break;
        }
        case 2: {  // A policy or budget of this family, another family's, or nonsense.
          const int kind = pick(4);
          const QString spec = kind < 2    ? model.specs[pick(static_cast<int>(model.specs.size()))]
                               : kind == 2 ? refused[pick(static_cast<int>(refused.size()))]
                                           : models[static_cast<size_t>(pick(3))].specs[0];
          ++switches;
          if (!w->setPolicySpec(spec)) ++refusals;
          break;
        }
        case 3: {  // A compare of two to four policies, maybe cancelled.
          if (w->run()->active()) break;
          QStringList specs;
          const int n = 2 + pick(3);
          for (int i = 0; i < n; ++i) specs << model.specs[pick(static_cast<int>(model.specs.size()))];
          if (w->runCompare(specs)) ++compares;
          spin(pick(600));
          if (pick(2) == 0) {
            w->cancel();
            ++cancels;
            QVERIFY2(settles(w.get(), 15000), "a compare's cancel was not acknowledged within 15 s");
          }
          break;
        }
        case 4: {  // Another family's model, even mid-run.
          current = static_cast<size_t>(pick(static_cast<int>(models.size())));
          w->openModel(models[current].dir);
          ++model_switches;
          break;
        }
        case 5:
          w->showTab(pick(3));
          w->setOverlays(static_cast<unsigned>(rng()));
          break;
        case 6: {  // Close the window mid-run; a new one opens.
          if (w->run()->active() || w->compare()->running()) ++closed_mid_run;
          w.reset();
          w = make(models[current].dir);
          watch(w.get());
          break;
        }
        case 7: {  // The model manager closed while it imports.
          const QString hf = qEnvironmentVariable("KVSTUDIO_JANUS_HF_DIR");
          if (hf.isEmpty() || imports_closed >= 3) break;
          QTemporaryDir out;
          ModelLocations locations;
          locations.bundledDemo = QStringLiteral(KVSTUDIO_DEMO_MODEL);
          locations.userModels = out.path();
          {
            ModelManagerDialog dialog(&locations);
            const QString target = out.filePath(QStringLiteral("imported"));
            dialog.startImport("janus-pro",
                               {{"--checkpoint", (hf + QStringLiteral("/bin")).toStdString()},
                                {"--out", target.toStdString()},
                                {"--image-size", "32"}},
                               QStringLiteral("bin"), target);
            spin(pick(200));
            if (dialog.importing()) ++imports_closed;
          }  // closed here, importing or not
          break;
        }
        default: spin(pick(300)); break;
      }
      QCoreApplication::processEvents();
    }
    // After the storm: every run ends and the window still draws a whole image.
    w->cancel();
    QVERIFY2(settles(w.get(), 15000), "the window did not settle after the storm");
    w->openModel(models[0].dir);
    QVERIFY(w->setPolicySpec(QStringLiteral("linear:rho=1/4")));
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    QVERIFY(w->generate());
    QVERIFY(done.wait(120000));
    QCOMPARE(done.takeFirst().at(0).toBool(), true);
    QVERIFY2(test::canvasSpread(w->canvas()) > 4, "canvas is blank after the storm");
    std::printf(
        "window storm: %d actions in %lld s: %d generations started (%d finished, %d ended otherwise), %d cancels, "
        "%d compares, %d policy changes (%d refused), %d model switches, %d windows closed mid-run, %d imports "
        "closed mid-way\n",
        actions, static_cast<long long>(clock.elapsed() / 1000), generations, finished, failed, cancels, compares,
        switches, refusals, model_switches, closed_mid_run, imports_closed);
  }
};

QTEST_MAIN(TestWindowStorm)
#include "test_window_storm.moc"
