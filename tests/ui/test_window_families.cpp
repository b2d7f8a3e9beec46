// The real window (offscreen) on the next-scale and masked families, with the
// random VAR and MAR demo bundles the CTest fixture makes: opening a bundle
// switches the policy list, the budget control and the sampling fields to the
// family; a policy of another family shows the error banner (never a crash);
// a VAR run with HeatKV at 10% streams scale by scale (calibrating first), and
// a MAR run with LazyMAR streams step by step with its token cache visible; a
// Janus-Pro run streams from a prompt with its words under the canvas, and the
// model manager imports a folder laid out like the official download; a
// Lumina-mGPT run offers the model's sizes and streams one image row (with its
// end-of-line token) per line at the size chosen; an Infinity run streams the
// scales of a non-square size with its prompt's T5 pieces lit by each scale's
// cross-attention.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QGroupBox>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <cmath>

#include "engine/cache/policies/scale_attention_profile.h"
#include "tests/ui/window_test_support.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/compare_view.h"
#include "ui/widgets/error_banner.h"
#include "ui/widgets/generation_canvas.h"
#include "ui/widgets/main_window.h"
#include "ui/widgets/model_manager_dialog.h"
#include "ui/widgets/parameter_panel.h"
#include "ui/widgets/prompt_attention_strip.h"

using namespace kvs::ui;

namespace {

MainWindowOptions options(const char* model) { return test::windowOptions(QString::fromUtf8(model)); }
using test::canvasSpread;

}  // namespace

class TestWindowFamilies : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void varBundleOffersOnlyScalePolicies() {
    MainWindow w(options(KVSTUDIO_VAR_DEMO));
    QCOMPARE(QString::fromStdString(w.model().family), QStringLiteral("var"));
    QCOMPARE(w.family().name, std::string("var"));
    QCOMPARE(w.parameters()->offeredPolicies(),
             (QStringList{QStringLiteral("full"), QStringLiteral("streaming"), QStringLiteral("amskv"),
                          QStringLiteral("scale_groups"), QStringLiteral("heatkv"), QStringLiteral("scalekv"),
                          QStringLiteral("hack"), QStringLiteral("h2o"), QStringLiteral("snapkv")}));
    // HeatKV's budget is a share of the whole cache: the slider writes it.
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1")));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("heatkv:budget=0.1"));
    // AMS-KV's allocation ablation is a choice of the form; untouched defaults stay out of the spec.
    QVERIFY(w.setPolicySpec(QStringLiteral("amskv")));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("amskv"));
    auto* allocation = w.parameters()->findChild<QComboBox*>(QStringLiteral("param_allocation"));
    QVERIFY(allocation != nullptr);
    allocation->setCurrentText(QStringLiteral("uniform"));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("amskv:allocation=uniform"));
    // So is the scale group AMS-KV's Table 1 removes, beside its condensed and local counts.
    QVERIFY(w.setPolicySpec(QStringLiteral("scale_groups")));
    auto* removed = w.parameters()->findChild<QComboBox*>(QStringLiteral("param_remove"));
    QVERIFY(removed != nullptr);
    QCOMPARE(removed->count(), 3);  // intermediate, condensed, local (hidden while local)
    QCOMPARE(removed->currentText(), QStringLiteral("intermediate"));
    removed->setCurrentText(QStringLiteral("local"));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("scale_groups:remove=local"));
    removed->setCurrentText(QStringLiteral("condensed"));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("scale_groups:remove=condensed"));
    auto* local = w.parameters()->findChild<QSpinBox*>(QStringLiteral("param_local"));
    QVERIFY(local != nullptr);
    local->setValue(1);
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("scale_groups:local=1,remove=condensed"));
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1")));
    QVERIFY(!w.parameters()->findChild<QSpinBox*>(QStringLiteral("stepsSpin"))->isVisibleTo(w.parameters()));
    QCOMPARE(&w.compareView()->family(), &w.family());
    for (const QString& spec : w.compareView()->configs())
      QVERIFY2(policyFamilyProblem(spec, w.family()).isEmpty(), qPrintable(spec));

    // Switching to the raster demo brings the raster policies back.
    QVERIFY(w.openModel(QStringLiteral(KVSTUDIO_DEMO_MODEL)));
    QVERIFY(w.parameters()->offeredPolicies().contains(QStringLiteral("linear")));
    QVERIFY(!w.parameters()->offeredPolicies().contains(QStringLiteral("heatkv")));
  }

  void marBundleOffersOnlyMaskedPolicies() {
    MainWindow w(options(KVSTUDIO_MAR_DEMO));
    QCOMPARE(w.family().name, std::string("mar"));
    QCOMPARE(w.parameters()->offeredPolicies(), (QStringList{QStringLiteral("full"), QStringLiteral("lazymar")}));
    QVERIFY(w.parameters()->findChild<QSpinBox*>(QStringLiteral("stepsSpin"))->isVisibleTo(w.parameters()));
    QVERIFY(w.setPolicySpec(QStringLiteral("lazymar:interval=4")));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("lazymar:interval=4"));
    // The diffusion-head cache is a choice of the panel like the others.
    QVERIFY(w.setPolicySpec(QStringLiteral("lazymar:interval=4,head_cache=on,head_threshold=5")));
    // (the panel writes parameters in name order)
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("lazymar:head_cache=on,head_threshold=5,interval=4"));
    // So are the token-selection strategies of the ablation (Table 3).
    auto* selection = w.parameters()->findChild<QComboBox*>(QStringLiteral("param_selection"));
    QVERIFY(selection != nullptr);
    QCOMPARE(selection->count(), 5);
    QCOMPARE(selection->currentText(), QStringLiteral("max_similarity"));
    QVERIFY(w.setPolicySpec(QStringLiteral("lazymar:interval=4,selection=random")));
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("lazymar:interval=4,selection=random"));
    QVERIFY(w.setPolicySpec(QStringLiteral("lazymar:interval=4")));
    const GenerationSettings s = w.parameters()->settings();
    QCOMPARE(s.topK, int64_t{0});  // MAR refuses top-k/top-p: the panel never sends them
    QCOMPARE(s.topP, 1.0);
    QVERIFY(s.steps > 0);

    // A bundle's recorded steps and CFG schedule (the trained demo: 32, linear)
    // become the panel's defaults and reach the request.
    kvs::ModelSummary recorded = w.model();
    recorded.sampling_defaults.steps = 20;
    recorded.sampling_defaults.cfg_schedule = "constant";
    w.parameters()->setModel(recorded);
    QCOMPARE(w.parameters()->findChild<QSpinBox*>(QStringLiteral("stepsSpin"))->value(), 20);
    const kvs::GenerationRequest request = w.parameters()->settings().toRequest();
    QCOMPARE(request.steps, int64_t{20});
    QCOMPARE(QString::fromStdString(request.cfg_schedule), QStringLiteral("constant"));
  }

  void otherFamilysPolicyShowsTheBanner() {
    MainWindow w(options(KVSTUDIO_VAR_DEMO));
    w.show();
    const QString before = w.parameters()->policySpec();
    QVERIFY(!w.setPolicySpec(QStringLiteral("linear:rho=0.25")));
    QVERIFY(w.banner()->isVisible());
    QVERIFY2(w.banner()->message().contains(QStringLiteral("linear")), qPrintable(w.banner()->message()));
    QCOMPARE(w.parameters()->policySpec(), before);  // the panel keeps a valid spec
    QVERIFY(!w.runCompare({QStringLiteral("full"), QStringLiteral("headkv:rho=0.25")}));
    QVERIFY(w.banner()->message().contains(QStringLiteral("headkv")));
    QVERIFY(!w.compare()->running());
    QVERIFY(!w.setPolicySpec(QStringLiteral("lazymar")));

    MainWindow m(options(KVSTUDIO_MAR_DEMO));
    m.show();
    QVERIFY(!m.setPolicySpec(QStringLiteral("heatkv:budget=0.1")));
    QVERIFY(m.banner()->message().contains(QStringLiteral("heatkv")));
  }

  void varStreamsScaleByScaleWithHeatKv() {
    MainWindow w(options(KVSTUDIO_VAR_DEMO));
    w.show();
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVector<int64_t> unitsSeen;
    QVector<bool> previewPerUnit;
    connect(w.run(), &RunViewModel::unitChanged, this, [&] {
      if (const auto& u = w.run()->lastUnit(); u && (unitsSeen.isEmpty() || unitsSeen.back() != u->unit_index)) {
        unitsSeen << u->unit_index;
        previewPerUnit << (u->preview.has_value());
      }
    });
    QVERIFY(w.generate());
    // The bundle has no heatkv_calibration.json: the window says it is calibrating.
    QVERIFY(w.run()->calibrating());
    QVERIFY(w.findChild<QProgressBar*>()->format().contains(QStringLiteral("Calibrating HeatKV")));
    QVERIFY(done.wait(120000));
    const int64_t scales = w.run()->unitsTotal();
    QVERIFY(scales >= 3);
    QCOMPARE(w.run()->unitsDone(), scales);
    QCOMPARE(unitsSeen.size(), static_cast<int>(scales));  // one event per scale, in order
    for (int i = 0; i < unitsSeen.size(); ++i) QCOMPARE(unitsSeen[i], int64_t{i});
    QCOMPARE(previewPerUnit.count(true), static_cast<int>(scales));  // each scale's preview as it is decoded
    QCOMPARE(w.run()->memory().size(), static_cast<size_t>(scales));
    QVERIFY(w.run()->memory().back().kv_bytes_logical < w.run()->memory().back().kv_bytes_full);
    QCOMPARE(w.run()->scaleAttention().size(), static_cast<size_t>(scales));
    QVERIFY(w.findChild<QProgressBar*>()->format().contains(QStringLiteral("scale %1/%1").arg(scales)));
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after a VAR generation");
  }

  void varScaleKvSaysItCalibratesOncePerModel() {
    MainWindow w(options(KVSTUDIO_VAR_DEMO));
    w.show();
    QVERIFY(w.setPolicySpec(QStringLiteral("scalekv:rho=1/4")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    // No scalekv_calibration.json in this bundle: the window names the policy and its work.
    QVERIFY(w.run()->calibrating());
    QVERIFY(w.findChild<QProgressBar*>()->format().contains(QStringLiteral("Calibrating ScaleKV")));
    QVERIFY(done.wait(120000));
    // The loaded model keeps it: the next scalekv run starts drawing at once
    // (Generate is refused until the worker has wound down the first run).
    bool started = false;
    for (int i = 0; i < 200 && !(started = w.generate()); ++i) QTest::qWait(50);
    QVERIFY2(started, qPrintable(w.banner()->message()));
    QVERIFY(!w.run()->calibrating());
    QVERIFY(done.wait(120000));
    QVERIFY(w.run()->memory().back().kv_bytes_logical < w.run()->memory().back().kv_bytes_full);
  }

  void varHeatKvCalibrationImagesIsAnnouncedOncePerN() {
    MainWindow w(options(KVSTUDIO_VAR_DEMO));
    w.show();
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1")));
    // The policy form offers the calibration set (built from the registry).
    auto* images = w.parameters()->findChild<QSpinBox*>(QStringLiteral("param_calibration_images"));
    QVERIFY(images != nullptr);
    QCOMPARE(images->value(), 0);
    images->setValue(2);
    QCOMPARE(w.parameters()->policySpec(), QStringLiteral("heatkv:budget=0.1,calibration_images=2"));
    QSignalSpy done(&w, &MainWindow::runFinished);
    auto generateWhenIdle = [&] {
      bool started = false;  // Generate is refused until the worker has wound down the last run
      for (int i = 0; i < 200 && !(started = w.generate()); ++i) QTest::qWait(50);
      return started;
    };
    QVERIFY(generateWhenIdle());
    QVERIFY(w.run()->calibrating());
    QVERIFY(w.findChild<QProgressBar*>()->format().contains(QStringLiteral("Calibrating HeatKV")));
    QCOMPARE(w.run()->pendingCalibration()->work, std::string("S-CAS head scores on 2 classes"));
    QVERIFY(done.wait(120000));
    // The same N again: the loaded model keeps it, no notice.
    QVERIFY(generateWhenIdle());
    QVERIFY(!w.run()->calibrating());
    QVERIFY(done.wait(120000));
    // Another N is measured (and announced) on its own.
    images->setValue(3);
    QVERIFY(generateWhenIdle());
    QVERIFY(w.run()->calibrating());
    QCOMPARE(w.run()->pendingCalibration()->work, std::string("S-CAS head scores on 3 classes"));
    QVERIFY(done.wait(120000));
    QVERIFY(w.run()->memory().back().kv_bytes_logical < w.run()->memory().back().kv_bytes_full);
  }

  void varHeatKvCalibrationImagesTakesTheBundlesFileOnThoseClasses() {
    // A copy of the bundle with a heatkv_calibration.json measured on the 3
    // classes calibration_images=3 picks (uniform attention, the model's geometry).
    QTemporaryDir copy;
    QVERIFY(copy.isValid());
    const QDir source(QString::fromUtf8(KVSTUDIO_VAR_DEMO));
    for (const QString& f : source.entryList(QDir::Files))
      QVERIFY(QFile::copy(source.filePath(f), QDir(copy.path()).filePath(f)));
    MainWindow w(test::windowOptions(copy.path()));
    w.show();
    const kvs::ModelSummary& m = w.model();
    QVERIFY(m.num_classes >= 3 && !m.scale_sides.empty());
    kvs::ScaleAttentionProfile p;
    p.model = m.name;
    p.layers = m.n_layer;
    p.heads = m.kv_heads;
    for (int64_t side : m.scale_sides) p.unit_tokens.push_back(side * side);
    for (int64_t i = 0; i < 3; ++i) p.classes.push_back(i * m.num_classes / 3);
    p.samples = 3;
    p.cfg = 4.0;  // the demo's default CFG, the run's: a calibration serves runs at its own CFG
    const int64_t k = p.scales();
    p.beta.assign(static_cast<size_t>(p.layers * p.heads * k * k), 0.0);
    for (int64_t l = 0; l < p.layers; ++l)
      for (int64_t h = 0; h < p.heads; ++h)
        for (int64_t k1 = 0; k1 < k; ++k1) {
          int64_t seen = 0;
          for (int64_t k2 = 0; k2 <= k1; ++k2) seen += p.unit_tokens[static_cast<size_t>(k2)];
          for (int64_t k2 = 0; k2 <= k1; ++k2)
            p.beta_at(l, h, k1, k2) = static_cast<double>(p.unit_tokens[static_cast<size_t>(k2)]) / seen;
        }
    p.save(QDir(copy.path()).filePath(QStringLiteral("heatkv_calibration.json")).toStdString());

    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1,calibration_images=3")));
    QVERIFY(w.generate());
    QVERIFY(!w.run()->calibrating());  // the file serves N = 3: nothing to measure
    QVERIFY(done.wait(120000));
    // N = 2 is other classes: the run measures them, and says so.
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1,calibration_images=2")));
    bool started = false;
    for (int i = 0; i < 200 && !(started = w.generate()); ++i) QTest::qWait(50);
    QVERIFY2(started, qPrintable(w.banner()->message()));
    QVERIFY(w.run()->calibrating());
    QVERIFY(done.wait(120000));
    // N = 3 again at another CFG: the file was made at CFG 4, so it is measured anew.
    QVERIFY(w.setPolicySpec(QStringLiteral("heatkv:budget=0.1,calibration_images=3,calibration_cfg=2")));
    started = false;
    for (int i = 0; i < 200 && !(started = w.generate()); ++i) QTest::qWait(50);
    QVERIFY2(started, qPrintable(w.banner()->message()));
    QVERIFY(w.run()->calibrating());
    QVERIFY(done.wait(120000));
  }

  void janusGeneratesFromAPromptWithItsWordsUnderTheCanvas() {
    MainWindow w(options(KVSTUDIO_JANUS_DEMO));
    w.show();
    QCOMPARE(w.family().name, std::string("janus-pro"));
    QVERIFY(w.parameters()->offeredPolicies().contains(QStringLiteral("linear")));
    QVERIFY(w.parameters()->offeredPolicies().contains(QStringLiteral("headkv")));
    auto* prompt = w.parameters()->findChild<QPlainTextEdit*>();
    QVERIFY(prompt && prompt->isVisibleTo(w.parameters()));
    prompt->setPlainText(QStringLiteral("a lighthouse at dawn, watercolor"));
    QVERIFY(w.setPolicySpec(QStringLiteral("headkv:rho=0.25")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(120000));
    QCOMPARE(w.run()->unitsDone(), int64_t{16});
    QVERIFY(w.run()->memory().back().kv_bytes_logical < w.run()->memory().back().kv_bytes_full);
    QVERIFY(w.promptStrip()->isVisibleTo(&w));
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after a Janus-Pro generation");
  }

  // The Janus-Pro demo ships its VQ encoder: a picture's top rows are given and
  // the model draws the rest, the canvas marking where the given rows end.
  void janusFinishesAPictureFromItsTopRows() {
    QTemporaryDir dir;
    const QString picture = dir.filePath(QStringLiteral("start.png"));
    QImage start(96, 80, QImage::Format_RGB32);
    for (int y = 0; y < start.height(); ++y)
      for (int x = 0; x < start.width(); ++x) start.setPixel(x, y, qRgb(40 + x * 2, 90 + y, y < 40 ? 220 : 30));
    QVERIFY(start.save(picture));
    MainWindow w(options(KVSTUDIO_JANUS_DEMO));
    w.show();
    QVERIFY(w.model().finishes_pictures);
    auto* box = w.parameters()->findChild<QGroupBox*>(QStringLiteral("finishBox"));
    QVERIFY(box && box->isVisibleTo(w.parameters()));
    auto* keep = w.parameters()->findChild<QSpinBox*>(QStringLiteral("keepRows"));
    QVERIFY(keep);
    QCOMPARE(keep->maximum(), static_cast<int>(w.model().grid) - 1);
    box->setChecked(true);
    w.parameters()->findChild<QLineEdit*>(QStringLiteral("finishPath"))->setText(picture);
    keep->setValue(6);
    w.parameters()
        ->findChild<QPlainTextEdit*>(QStringLiteral("promptEdit"))
        ->setPlainText(QStringLiteral("a lake under a clear sky"));
    QVERIFY(w.setPolicySpec(QStringLiteral("linear:rho=0.25")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(120000));
    QCOMPARE(w.run()->started().given_units, int64_t{6});
    QCOMPARE(w.run()->unitsDone(), w.run()->unitsTotal());
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after finishing a picture");
    // Off again: the next run draws every row.
    box->setChecked(false);
    QVERIFY(w.parameters()->settings().finishFrom.isEmpty());
  }

  void luminaOffersItsSizesAndStreamsRowsWithTheirEndOfLineTokens() {
    MainWindow w(options(KVSTUDIO_LUMINA_DEMO));
    w.show();
    QCOMPARE(w.family().name, std::string("lumina-mgpt"));
    QVERIFY(w.parameters()->offeredPolicies().contains(QStringLiteral("linear")));
    auto* prompt = w.parameters()->findChild<QPlainTextEdit*>(QStringLiteral("promptEdit"));
    QVERIFY(prompt && prompt->isVisibleTo(w.parameters()));
    auto* sizes = w.parameters()->findChild<QComboBox*>(QStringLiteral("sizeCombo"));
    QVERIFY(sizes && sizes->isVisibleTo(w.parameters()));
    QCOMPARE(sizes->itemText(0), QStringLiteral("256x256"));  // the model's own size first
    // No encoder in this bundle: nothing to finish a picture with.
    QVERIFY(!w.parameters()->findChild<QGroupBox*>(QStringLiteral("finishBox"))->isVisibleTo(w.parameters()));
    const int wide = sizes->findText(QStringLiteral("512x128"));
    QVERIFY(wide > 0);
    sizes->setCurrentIndex(wide);
    prompt->setPlainText(QStringLiteral("a red fox in the snow"));
    QVERIFY(w.setPolicySpec(QStringLiteral("linear:rho=0.5")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(120000));
    QCOMPARE(w.run()->unitsDone(), int64_t{8});  // 128 px: 4 grid units, 8 rows of 32 + 1 tokens
    QVERIFY(w.run()->memory().back().kv_bytes_logical < w.run()->memory().back().kv_bytes_full);
    QVERIFY(w.promptStrip()->isVisibleTo(&w));
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after a Lumina-mGPT generation");
  }

  void infinityStreamsTheScalesOfTheChosenSizeWithItsPromptWordsLit() {
    MainWindow w(options(KVSTUDIO_INFINITY_DEMO));
    w.show();
    QCOMPARE(w.family().name, std::string("infinity"));
    QVERIFY(w.parameters()->offeredPolicies().contains(QStringLiteral("heatkv")));
    auto* prompt = w.parameters()->findChild<QPlainTextEdit*>(QStringLiteral("promptEdit"));
    QVERIFY(prompt && prompt->isVisibleTo(w.parameters()));
    auto* sizes = w.parameters()->findChild<QComboBox*>(QStringLiteral("sizeCombo"));
    QVERIFY(sizes && sizes->isVisibleTo(w.parameters()));
    const int wide = sizes->findText(QStringLiteral("80x60"));
    QVERIFY2(wide > 0, "the 4:3 template of the model's pixel budget is offered");
    sizes->setCurrentIndex(wide);
    prompt->setPlainText(QStringLiteral("a red fox in the snow"));
    QVERIFY(w.setPolicySpec(QStringLiteral("streaming:rho=0.25")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(120000));
    QVERIFY(w.run()->unitsTotal() > 1);
    QCOMPARE(w.run()->unitsDone(), w.run()->unitsTotal());
    QVERIFY(w.run()->memory().back().kv_bytes_logical < w.run()->memory().back().kv_bytes_full);
    // The strip: one share per T5 piece of the prompt (and its </s>), summing to 1.
    QVERIFY(w.promptStrip()->isVisibleTo(&w));
    const auto& labels = w.run()->conditionLabels();
    QVERIFY(labels.size() >= 3);
    QCOMPARE(labels.back(), std::string("</s>"));
    const std::vector<double>& shares = w.run()->promptAttention();
    QCOMPARE(shares.size(), labels.size());
    double sum = 0;
    for (double v : shares) {
      QVERIFY(v >= 0);
      sum += v;
    }
    QVERIFY2(std::abs(sum - 1.0) < 1e-3, qPrintable(QString::number(sum)));
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after an Infinity generation");
  }

  void modelManagerImportsTheDownloadedJanusFolder() {
    const QString hf = qEnvironmentVariable("KVSTUDIO_JANUS_HF_DIR");
    if (hf.isEmpty()) QSKIP("KVSTUDIO_JANUS_HF_DIR is not set (ctest's make_janus_hf_folder step writes it)");
    QTemporaryDir models;
    ModelLocations locations;
    locations.bundledDemo = QStringLiteral(KVSTUDIO_DEMO_MODEL);
    locations.userModels = models.path();
    ModelManagerDialog dialog(&locations);
    const QString out = models.filePath(QStringLiteral("Janus-Pro-tiny"));
    dialog.startImport("janus-pro",
                       {{"--checkpoint", (hf + QStringLiteral("/bin")).toStdString()},
                        {"--out", out.toStdString()},
                        {"--image-size", "32"}},
                       QStringLiteral("bin"), out);
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.importing(), 60000);
    bool listed = false;
    for (const auto& m : dialog.models()) listed = listed || (m.family == "janus-pro" && m.dir == out.toStdString());
    QVERIFY2(listed, "the imported Janus-Pro bundle is not in the model list");
  }

  void importFormAsksForInfinitysThreeParts() {
    QTemporaryDir models;
    ModelLocations locations;
    locations.bundledDemo = QStringLiteral(KVSTUDIO_DEMO_MODEL);
    locations.userModels = models.path();
    ModelManagerDialog dialog(&locations);
    QSignalSpy failed(&dialog, &ModelManagerDialog::error);
    bool checked = false;
    QTimer::singleShot(0, &dialog, [&] {
      auto* form = qobject_cast<QDialog*>(QApplication::activeModalWidget());
      if (!form) return;  // the test fails on `checked`, never hangs
      // The checks return early on a failure; the form is closed either way.
      [&] {
        auto* family = form->findChild<QComboBox*>();
        QVERIFY(family != nullptr);
        const int infinity = family->findData(QStringLiteral("infinity"));
        QVERIFY(infinity >= 0);
        family->setCurrentIndex(infinity);
        for (const char* option : {"checkpoint", "vae", "t5"}) {
          auto* edit = form->findChild<QLineEdit*>(QStringLiteral("import-infinity--") + QString::fromLatin1(option));
          QVERIFY2(edit && edit->isVisibleTo(form), option);
          edit->setText(models.filePath(QString::fromLatin1(option) + QStringLiteral("-missing")));
        }
        // The single-checkpoint and tokenizer fields stay hidden: the three parts and the name remain.
        int visibleEdits = 0;
        for (auto* edit : form->findChildren<QLineEdit*>())
          if (edit->isVisibleTo(form)) ++visibleEdits;
        QCOMPARE(visibleEdits, 4);
        checked = true;
      }();
      if (checked) form->accept();
      else form->reject();
    });
    dialog.importCheckpoint();
    QVERIFY(checked);
    // The converter got all three parts: it names the first one that is missing.
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.importing(), 60000);
    QCOMPARE(failed.count(), 1);
    const QString message = failed.front().front().toString();
    QVERIFY2(message.contains(QStringLiteral("-missing")), qPrintable(message));
  }

  void marStreamsStepByStepWithLazyMar() {
    MainWindow w(options(KVSTUDIO_MAR_DEMO));
    w.show();
    w.parameters()->findChild<QSpinBox*>(QStringLiteral("stepsSpin"))->setValue(12);
    QVERIFY(w.setPolicySpec(QStringLiteral("lazymar:start=2,interval=5")));
    QSignalSpy done(&w, &MainWindow::runFinished);
    QVERIFY(w.generate());
    QVERIFY(done.wait(120000));
    QCOMPARE(w.run()->unitsTotal(), int64_t{12});
    QCOMPARE(w.run()->unitsDone(), int64_t{12});
    const auto& order = w.run()->generationStep();
    QVERIFY(!order.empty());
    QCOMPARE(w.run()->knownTokens(), static_cast<int64_t>(order.size()));
    int64_t lazySteps = 0;
    for (const auto& m : w.run()->memory()) {
      QVERIFY(m.flops > 0);
      if (m.recomputed_tokens >= 0 && m.recomputed_tokens < static_cast<int64_t>(order.size())) ++lazySteps;
    }
    QVERIFY(lazySteps > 0);                               // LazyMAR reused features at some steps
    QVERIFY(w.run()->lastUnit()->attention.has_value());  // the new tokens' attention
    QVERIFY(w.findChild<QProgressBar*>()->format().contains(QStringLiteral("step 12/12")));
    QVERIFY2(canvasSpread(w.canvas()) > 4, "canvas is blank after a MAR generation");
  }
};

QTEST_MAIN(TestWindowFamilies)
#include "test_window_families.moc"
