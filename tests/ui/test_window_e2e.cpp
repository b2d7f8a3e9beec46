// End to end, under Xvfb: the real `kvstudio` window generates with the demo
// model (switching to LineAR mid-run, debug overlay on), then runs a 3-way
// comparison, each time through `--run-once`, which saves a screenshot and a
// JSON summary. The test checks the screenshot's canvas pixels itself, and that
// the gauges moved and fell below the full-cache curve after the switch. Then
// the other families, on random VAR and MAR bundles (CTest fixture): a VAR run
// with HeatKV at 10% (calibrated on first use), a MAR run with LazyMAR, and a
// MAR comparison.
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QtTest>

#include <cmath>

namespace {

QJsonObject runOnce(const QStringList& args, const QString& shot) {
  QFile::remove(shot);
  QProcess p;
  p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  QStringList all = {QStringLiteral("--run-once"), QStringLiteral("--threads"), QStringLiteral("1"),
                     QStringLiteral("--screenshot"), shot};
  all << args;
  p.start(QStringLiteral(KVSTUDIO_GUI_EXE), all);
  if (!p.waitForFinished(240000)) {
    p.kill();
    p.waitForFinished();
    qWarning("kvstudio --run-once did not finish in 240 s");
    return {};
  }
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    qWarning("kvstudio --run-once exited with %d", p.exitCode());
    return {};
  }
  QFile f(QFileInfo(shot).dir().filePath(QFileInfo(shot).completeBaseName() + QStringLiteral(".json")));
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(f.readAll()).object();
}

// Grey-level spread and distinct colours of a region: a blank canvas has ~0 / ~1.
void regionStats(const QImage& image, const QRect& r, double* stddev, int* colours) {
  const QImage crop = image.copy(r).convertToFormat(QImage::Format_RGB32);
  double sum = 0, sum2 = 0;
  QSet<QRgb> distinct;
  for (int y = 0; y < crop.height(); ++y)
    for (int x = 0; x < crop.width(); ++x) {
      const QRgb c = crop.pixel(x, y);
      const double g = qGray(c);
      sum += g;
      sum2 += g * g;
      if (distinct.size() < 10000) distinct.insert(c);
    }
  const double n = static_cast<double>(crop.width()) * crop.height();
  *stddev = n > 0 ? std::sqrt(std::max(0.0, sum2 / n - (sum / n) * (sum / n))) : 0;
  *colours = distinct.size();
}

}  // namespace

class TestWindowE2E : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QDir().mkpath(QStringLiteral(KVSTUDIO_E2E_DIR)); }

  void generateSwitchToLinearAndScreenshot() {
    const QString shot = QStringLiteral(KVSTUDIO_E2E_DIR "/shot.png");
    const QJsonObject j = runOnce({QStringLiteral("--policy"), QStringLiteral("full"),
                                   QStringLiteral("--switch-policy"), QStringLiteral("linear:rho=0.25@4"),
                                   QStringLiteral("--debug-overlay")},
                                  shot);
    QVERIFY2(!j.isEmpty(), "no summary");
    QVERIFY(j["ok"].toBool());
    expectCanvasNotBlank(shot, j);
    const QImage image(shot);
    QVERIFY(image.width() >= 1000 && image.height() >= 700);

    const QJsonObject run = j["run"].toObject();
    QCOMPARE(run["units"].toInt(), 16);
    QCOMPARE(run["tokens_done"].toInt(), 256);
    const QJsonObject memory = run["memory"].toObject();
    QCOMPARE(memory["samples"].toInt(), 16);
    QVERIFY(memory["gauge_moved"].toBool());
    QVERIFY(memory["below_full"].toBool());  // LineAR took over mid-run
    QVERIFY(memory["kv_last"].toDouble() < memory["kv_full_last"].toDouble() * 0.5);
    const QJsonArray markers = run["policy_markers"].toArray();
    QCOMPARE(markers.size(), 1);
    QVERIFY(markers[0].toObject()["accepted"].toBool());
    QCOMPARE(run["policy_final"].toString(), QStringLiteral("linear:rho=0.25"));
    const QJsonObject debug = j["debug_overlay"].toObject();
    QVERIFY(debug["visible"].toBool());
    QVERIFY(debug["frames"].toInt() > 0);  // Dear ImGui drew in its QOpenGLWidget
  }

  void threeWayCompare() {
    const QString shot = QStringLiteral(KVSTUDIO_E2E_DIR "/compare.png");
    const QJsonObject j =
        runOnce({QStringLiteral("--compare"), QStringLiteral("full,linear:rho=0.25,streaming:rho=0.25")}, shot);
    QVERIFY2(!j.isEmpty(), "no summary");
    QVERIFY(j["ok"].toBool());
    QVERIFY(!QImage(shot).isNull());
    const QJsonArray rows = j["compare"].toObject()["rows"].toArray();
    QCOMPARE(rows.size(), 3);
    QVERIFY(rows[0].toObject()["reference"].toBool());
    QCOMPARE(rows[0].toObject()["token_agreement"].toDouble(), 1.0);
    for (int i = 1; i < 3; ++i) {
      const QJsonObject row = rows[i].toObject();
      QVERIFY(row["kv_bytes_final"].toDouble() < row["kv_bytes_full"].toDouble());
      QVERIFY(row["ssim"].toDouble() <= 1.0);
      QVERIFY(row["tokens_per_second"].toDouble() > 0);
    }
    QVERIFY(j["canvas"].toObject()["nonblank"].toBool());
  }

  void varStreamsScalesWithHeatKv() {
    const QString shot = QStringLiteral(KVSTUDIO_E2E_DIR "/var.png");
    const QJsonObject j = runOnce({QStringLiteral("--model"), QStringLiteral(KVSTUDIO_VAR_DEMO),
                                   QStringLiteral("--policy"), QStringLiteral("heatkv:budget=0.1")},
                                  shot);
    QVERIFY2(!j.isEmpty(), "no summary");
    QVERIFY(j["ok"].toBool());
    QCOMPARE(j["model_family"].toString(), QStringLiteral("var"));
    expectCanvasNotBlank(shot, j);
    const QJsonObject run = j["run"].toObject();
    QCOMPARE(run["unit_name"].toString(), QStringLiteral("scale"));
    QVERIFY(run["units_total"].toInt() >= 3);
    QCOMPARE(run["units"].toInt(), run["units_total"].toInt());
    QCOMPARE(run["policy_final"].toString(), QStringLiteral("heatkv:budget=0.1"));
    const QJsonObject memory = run["memory"].toObject();
    QCOMPARE(memory["samples"].toInt(), run["units_total"].toInt());
    QVERIFY(memory["below_full"].toBool());
  }

  void marStreamsStepsWithLazyMar() {
    const QString shot = QStringLiteral(KVSTUDIO_E2E_DIR "/mar.png");
    const QJsonObject j = runOnce({QStringLiteral("--model"), QStringLiteral(KVSTUDIO_MAR_DEMO),
                                   QStringLiteral("--policy"), QStringLiteral("lazymar:start=2,interval=5"),
                                   QStringLiteral("--steps"), QStringLiteral("16")},
                                  shot);
    QVERIFY2(!j.isEmpty(), "no summary");
    QVERIFY(j["ok"].toBool());
    QCOMPARE(j["model_family"].toString(), QStringLiteral("mar"));
    expectCanvasNotBlank(shot, j);
    const QJsonObject run = j["run"].toObject();
    QCOMPARE(run["unit_name"].toString(), QStringLiteral("step"));
    QCOMPARE(run["units_total"].toInt(), 16);
    QCOMPARE(run["units"].toInt(), 16);
    const QJsonObject memory = run["memory"].toObject();
    QVERIFY(memory["flops_total"].toDouble() > 0);
    QVERIFY(memory["steps_with_reused_tokens"].toInt() > 0);
  }

  void marCompareAgainstFullRecomputation() {
    const QString shot = QStringLiteral(KVSTUDIO_E2E_DIR "/mar_compare.png");
    const QJsonObject j =
        runOnce({QStringLiteral("--model"), QStringLiteral(KVSTUDIO_MAR_DEMO), QStringLiteral("--steps"),
                 QStringLiteral("16"), QStringLiteral("--compare"),
                 QStringLiteral("full,lazymar:start=2,interval=5,lazymar:start=2,interval=5,head_cache=on")},
                shot);
    QVERIFY2(!j.isEmpty(), "no summary");
    QVERIFY(j["ok"].toBool());
    QVERIFY(!QImage(shot).isNull());
    const QJsonArray rows = j["compare"].toObject()["rows"].toArray();
    QCOMPARE(rows.size(), 3);
    const QJsonObject full = rows[0].toObject(), lazy = rows[1].toObject(), head = rows[2].toObject();
    QVERIFY(full["reference"].toBool());
    QVERIFY(full["identical"].toBool());
    QVERIFY(lazy["flops"].toDouble() > 0 && lazy["flops"].toDouble() < full["flops"].toDouble());
    QVERIFY(lazy["token_agreement"].isNull());  // not meaningful for MAR's continuous tokens
    QVERIFY(lazy["ssim"].toDouble() <= 1.0);
    // The diffusion-head cache saves on top of the token and condition caches.
    QVERIFY(head["flops"].toDouble() > 0 && head["flops"].toDouble() < lazy["flops"].toDouble());
    QVERIFY(!head["identical"].toBool());
    QVERIFY(j["canvas"].toObject()["nonblank"].toBool());
  }

  void rasterPolicyOnVarFailsWithAMessage() {
    const QString shot = QStringLiteral(KVSTUDIO_E2E_DIR "/var_bad_policy.png");
    QFile::remove(shot);
    QProcess p;
    p.start(QStringLiteral(KVSTUDIO_GUI_EXE),
            {QStringLiteral("--run-once"), QStringLiteral("--screenshot"), shot, QStringLiteral("--model"),
             QStringLiteral(KVSTUDIO_VAR_DEMO), QStringLiteral("--policy"), QStringLiteral("linear:rho=0.25")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);  // refused with the banner's message, no crash
    QFile f(QFileInfo(shot).dir().filePath(QStringLiteral("var_bad_policy.json")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(jsonObject(f.readAll())["message"].toString().contains(QStringLiteral("linear")));
  }

 private:
  static QJsonObject jsonObject(const QByteArray& bytes) { return QJsonDocument::fromJson(bytes).object(); }

  static void expectCanvasNotBlank(const QString& shot, const QJsonObject& j) {
    const QImage image(shot);
    QVERIFY2(!image.isNull(), "screenshot missing");
    const QJsonArray r = j["canvas"].toObject()["rect_in_window"].toArray();
    const QRect rect(r[0].toInt(), r[1].toInt(), r[2].toInt(), r[3].toInt());
    QVERIFY(rect.width() > 100 && image.rect().contains(rect));
    double stddev = 0;
    int colours = 0;
    regionStats(image, rect, &stddev, &colours);
    QVERIFY2(stddev > 8 && colours > 50,
             qPrintable(QStringLiteral("canvas looks blank: stddev %1, %2 colours").arg(stddev).arg(colours)));
  }
};

QTEST_GUILESS_MAIN(TestWindowE2E)
#include "test_window_e2e.moc"
