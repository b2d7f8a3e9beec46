// The real window with the offscreen platform (no GL widget is created here):
// generate with the demo model, the canvas paints, Esc cancels at once, a policy
// edited mid-run applies at a line boundary, a broken model shows a banner, a
// PNG saved from the history recalls its parameters, and the compare table
// fills with one row per configuration; a chosen layer/head reaches the request.
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "engine/core/device.h"
#include "tests/ui/window_test_support.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/history_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/compare_view.h"
#include "ui/widgets/error_banner.h"
#include "ui/widgets/generation_canvas.h"
#include "ui/widgets/main_window.h"
#include "ui/widgets/model_manager_dialog.h"
#include "ui/widgets/parameter_panel.h"

using namespace kvs::ui;

namespace {

MainWindowOptions options() { return test::windowOptions(); }
using test::canvasSpread;

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void generatesAndPaints() {
    MainWindow w(options());
    w.show();
    QCOMPARE(w.model().name, std::string("llamagen-demo"));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(!w.generate());  // busy: refused with a notice, no crash
    QVERIFY(done.wait(60000));
    QVERIFY(done[0][0].toBool());
    QCOMPARE(w.history()->size(), 1);
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after a generation");
  }

  // --attention L:H and the layer/head combos: out-of-range choices are
  // refused, a valid one reaches the request (the attention map of that head).
  void layerHeadSelectionReachesTheRequest() {
    MainWindow w(options());
    w.show();
    const int64_t layers = w.model().n_layer, heads = w.model().kv_heads;
    QVERIFY(!w.selectLayerHead(layers, 0));
    QVERIFY(!w.selectLayerHead(0, heads));
    QVERIFY(!w.selectLayerHead(-2, 0));
    QVERIFY(w.selectLayerHead(layers - 1, heads - 1));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(60000));
    QCOMPARE(w.history()->entry(0).request.attention_layer, layers - 1);
    QCOMPARE(w.history()->entry(0).request.attention_head, heads - 1);
    QVERIFY(w.selectLayerHead(-1, -1));  // back to the mean
  }

  void escapeCancelsAtOnce() {
    MainWindow w(options());
    w.show();
    QSignalSpy done(&w, &MainWindow::runFinished);
    QSignalSpy units(w.run(), &RunViewModel::unitChanged);
    QVERIFY(w.generate());
    QVERIFY(units.wait(60000));
    QElapsedTimer clock;
    clock.start();
    QTest::keyClick(&w, Qt::Key_Escape);
    QVERIFY(done.wait(5000));
    QVERIFY(clock.elapsed() < 2000);
    QCOMPARE(w.run()->state(), RunState::Cancelled);
    QTest::keyClick(&w, Qt::Key_Escape);  // nothing running: harmless
    QVERIFY(w.generate());                // the session is usable again
    QVERIFY(done.wait(60000));
    QCOMPARE(w.run()->state(), RunState::Finished);
  }

  void policyEditedMidRunAppliesAtALine() {
    MainWindow w(options());
    w.show();
    w.parameters()->setPolicySpec(QStringLiteral("full"));
    QSignalSpy done(&w, &MainWindow::runFinished);
    bool edited = false;
    connect(w.run(), &RunViewModel::unitChanged, this, [&] {
      if (!edited && w.run()->unitsDone() >= 2) {
        edited = true;
        w.parameters()->setPolicySpec(QStringLiteral("streaming:rho=0.25"));
      }
    });
    QVERIFY(w.generate());
    QVERIFY(done.wait(60000));
    QVERIFY(edited);
    QCOMPARE(w.run()->policyMarkers().size(), 1);
    QVERIFY(w.run()->policyMarkers()[0].accepted);
    QCOMPARE(w.run()->activePolicy(), QStringLiteral("streaming:rho=0.25"));
    const auto& m = w.run()->memory().back();
    QVERIFY(m.kv_bytes_logical < m.kv_bytes_full);
  }

  void parameterPanelBuildsSpecsFromTheCatalog() {
    MainWindow w(options());
    ParameterPanel* panel = w.parameters();
    panel->setPolicySpec(QStringLiteral("linear:rho=0.25"));
    QCOMPARE(panel->policySpec(), QStringLiteral("linear:rho=0.25"));
    auto* nInit = panel->findChild<QSpinBox*>(QStringLiteral("param_n_init"));
    QVERIFY(nInit != nullptr);
    QVERIFY(!nInit->toolTip().isEmpty());  // the registry's one-sentence help
    nInit->setValue(8);
    QCOMPARE(panel->policySpec(), QStringLiteral("linear:n_init=8,rho=0.25"));
    auto* slider = panel->findChild<QSlider*>(QStringLiteral("budgetSlider"));
    QVERIFY(slider != nullptr);
    slider->setValue(50);
    QCOMPARE(panel->policySpec(), QStringLiteral("linear:n_init=8,rho=0.5"));
    // A choice parameter is a combo box of the registry's choices (LineAR's ablation).
    auto* guidance = panel->findChild<QComboBox*>(QStringLiteral("param_guidance"));
    QVERIFY(guidance != nullptr);
    QCOMPARE(guidance->count(), 2);
    QCOMPARE(guidance->currentText(), QStringLiteral("inter_line"));
    guidance->setCurrentText(QStringLiteral("attn_acc"));
    QCOMPARE(panel->policySpec(), QStringLiteral("linear:guidance=attn_acc,n_init=8,rho=0.5"));
    // Defaults stay out of the spec (HeadKV's match_total=false is the default).
    panel->setPolicySpec(QStringLiteral("headkv:rho=0.25"));
    QCOMPARE(panel->policySpec(), QStringLiteral("headkv:rho=0.25"));
    // A spec in tokens switches the slider to tokens; the spec round-trips.
    panel->setPolicySpec(QStringLiteral("streaming:budget=32,sink=2"));
    QCOMPARE(panel->policySpec(), QStringLiteral("streaming:budget=32,sink=2"));
    QCOMPARE(slider->maximum(), 256);  // the demo's 16x16 tokens
    panel->setPolicySpec(QStringLiteral("full"));
    QCOMPARE(panel->policySpec(), QStringLiteral("full"));
    // The class box searches by substring.
    auto* classes = panel->findChild<QComboBox*>(QStringLiteral("classCombo"));
    QCOMPARE(classes->count(), 12);  // the trained demo's scene classes, by name
    QCOMPARE(classes->itemText(1), QStringLiteral("mountains  ·  1"));
    QCOMPARE(classes->completer()->filterMode(), Qt::MatchContains);
    // The device menu: Automatic, the CPU, then every GPU by name (none here
    // without one); the settings carry the device name a request takes.
    auto* devices = panel->findChild<QComboBox*>(QStringLiteral("deviceCombo"));
    QVERIFY(devices != nullptr);
    const auto gpus = kvs::cuda_devices();
    QCOMPARE(devices->count(), 2 + static_cast<int>(gpus.size()));
    QCOMPARE(devices->itemText(0), QStringLiteral("Automatic"));
    QCOMPARE(devices->itemData(1).toString(), QStringLiteral("cpu"));
    for (const kvs::CudaDeviceInfo& gpu : gpus) {
      const int i = 2 + gpu.index;
      QCOMPARE(devices->itemData(i).toString(), QStringLiteral("cuda:%1").arg(gpu.index));
      QVERIFY(devices->itemText(i).contains(QString::fromStdString(gpu.name)));
    }
    GenerationSettings s = panel->settings();
    s.device = QStringLiteral("cpu");
    panel->setSettings(s);
    QCOMPARE(devices->currentIndex(), 1);
    QCOMPARE(panel->settings().device, QStringLiteral("cpu"));
    s.device = QStringLiteral("cuda:7");  // a GPU this machine lacks: automatic
    panel->setSettings(s);
    QCOMPARE(panel->settings().device, gpus.size() > 7 ? QStringLiteral("cuda:7") : QStringLiteral("auto"));
  }

  void settingsPersistAcrossSessions() {
    QTemporaryDir config;
    qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("KVStudioTest"));
    MainWindowOptions o = options();
    o.useSettings = true;
    {
      MainWindow w(o);
      GenerationSettings s = w.parameters()->settings();
      s.seed = 4242;
      s.classId = 6;
      s.policy = QStringLiteral("streaming:rho=0.5,sink=8");
      w.parameters()->setSettings(s);
      w.setOverlays(kOverlayRetained | kOverlayGrid);
      w.close();  // saves
    }
    MainWindow again(o);
    const GenerationSettings back = again.parameters()->settings();
    QCOMPARE(back.seed, quint64{4242});
    QCOMPARE(back.classId, int64_t{6});
    QCOMPARE(back.policy, QStringLiteral("streaming:rho=0.5,sink=8"));
    QCOMPARE(again.canvas()->overlays(), unsigned{kOverlayRetained | kOverlayGrid});
    qunsetenv("XDG_CONFIG_HOME");
  }

  void closingMidGenerationJoinsQuickly() {
    auto* w = new MainWindow(options());
    w->show();
    QSignalSpy units(w->run(), &RunViewModel::unitChanged);
    QVERIFY(w->generate());
    QVERIFY(units.wait(60000));
    QElapsedTimer clock;
    clock.start();
    w->close();
    delete w;
    QVERIFY2(clock.elapsed() < 2000, "closing mid-generation took longer than 2 s");
  }

  void rapidPolicySwitchesNeverBreakARun() {
    MainWindow w(options());
    w.show();
    QSignalSpy done(&w, &MainWindow::runFinished);
    int edits = 0;
    const QStringList specs = {QStringLiteral("linear:rho=0.25"), QStringLiteral("streaming:rho=0.5"),
                               QStringLiteral("h2o:rho=0.25"), QStringLiteral("linear:rho=0.01"),
                               QStringLiteral("full")};
    connect(w.run(), &RunViewModel::unitChanged, this,
            [&] { w.parameters()->setPolicySpec(specs[edits++ % specs.size()]); });
    QVERIFY(w.generate());
    QVERIFY(done.wait(60000));
    QVERIFY(done[0][0].toBool());
    QCOMPARE(w.run()->state(), RunState::Finished);
  }

  void modelManagerListsBundlesAndProblems() {
    QTemporaryDir dir;
    QDir(dir.path()).mkpath(QStringLiteral("broken"));
    QFile f(dir.filePath(QStringLiteral("broken/model.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("[]");
    f.close();
    ModelLocations locations{QStringLiteral(KVSTUDIO_DEMO_MODEL), dir.path(), {}};
    ModelManagerDialog dialog(&locations);
    QCOMPARE(dialog.models().size(), size_t{2});
    QVERIFY(dialog.models()[0].usable());
    QVERIFY(!dialog.models()[1].usable());
    QCOMPARE(locations.originOf(QString::fromStdString(dialog.models()[0].dir)), QStringLiteral("bundled demo"));
    QCOMPARE(locations.originOf(QString::fromStdString(dialog.models()[1].dir)), QStringLiteral("user models"));
  }

  void brokenModelShowsABanner() {
    MainWindow w(options());
    w.show();
    QTemporaryDir dir;
    QFile f(dir.filePath(QStringLiteral("model.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"format\": \"kvstudio-bundle\"");
    f.close();
    QVERIFY(!w.openModel(dir.path()));
    QVERIFY(!w.banner()->message().isEmpty());
    QCOMPARE(w.model().name, std::string("llamagen-demo"));  // the working model stays
  }

  void savedPngRecallsItsParameters() {
    MainWindow w(options());
    w.show();
    GenerationSettings s = w.parameters()->settings();
    s.seed = 987;
    s.classId = 4;
    s.cfgScale = 2.5;
    s.policy = QStringLiteral("linear:rho=0.5");
    w.parameters()->setSettings(s);
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(60000));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("saved.png"));
    w.savePng(0, path);
    QVERIFY(QFileInfo::exists(path));
    // A place that cannot be written: one clear message, no file, the history kept,
    // and the next save works.
    w.savePng(0, QStringLiteral("/proc/kvstudio-saved.png"));
    QVERIFY(w.banner()->message().contains(QStringLiteral("/proc/kvstudio-saved.png: cannot open for writing")));
    QVERIFY(!QFileInfo::exists(QStringLiteral("/proc/kvstudio-saved.png")));
    QCOMPARE(w.history()->size(), 1);
    const QString again = dir.filePath(QStringLiteral("again.png"));
    w.savePng(0, again);
    QVERIFY(QFileInfo::exists(again));
    // Change everything, then recall from the file.
    GenerationSettings other = s;
    other.seed = 1;
    other.classId = 0;
    other.cfgScale = 4;
    other.policy = QStringLiteral("full");
    w.parameters()->setSettings(other);
    w.openPng(path);
    QCOMPARE(w.history()->size(), 2);
    const GenerationSettings back = w.parameters()->settings();
    QCOMPARE(back.seed, quint64{987});
    QCOMPARE(back.classId, int64_t{4});
    QCOMPARE(back.cfgScale, 2.5);
    QCOMPARE(back.policy, QStringLiteral("linear:rho=0.5"));
  }

  void compareTableHasOneRowPerConfiguration() {
    MainWindow w(options());
    w.show();
    QSignalSpy done(&w, &MainWindow::compareFinished);
    QVERIFY(w.runCompare({QStringLiteral("linear:rho=0.25"), QStringLiteral("streaming:rho=0.25")}));
    QVERIFY(done.wait(120000));
    QVERIFY(done[0][0].toBool());
    QTableWidget* table = w.compareView()->table();
    QCOMPARE(table->rowCount(), 3);
    QVERIFY(table->item(0, 0)->text().startsWith(QStringLiteral("full")));
    QCOMPARE(table->item(0, 5)->text(), QStringLiteral("100.0%"));
    QCOMPARE(table->item(1, 2)->text(), QStringLiteral("25.0%"));
    QVERIFY(table->item(1, 0)->text().startsWith(QStringLiteral("linear")));
    QCOMPARE(w.history()->size(), 3);
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
