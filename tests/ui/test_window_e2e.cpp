// End to end, under Xvfb: the real `kvstudio` window generates with the demo
// model (switching to LineAR mid-run, debug overlay on), then runs a 3-way
// comparison, each time through `--run-once`, which saves a screenshot and a
// JSON summary. The test checks the screenshot's canvas pixels itself, and that
// the gauges moved and fell below the full-cache curve after the switch.
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
  QStringList all = {QStringLiteral("--run-once"), QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--screenshot"), shot};
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
    const QJsonObject j = runOnce({QStringLiteral("--policy"), QStringLiteral("full"), QStringLiteral("--switch-policy"),
                                   QStringLiteral("linear:rho=0.25@4"), QStringLiteral("--debug-overlay")},
                                  shot);
    QVERIFY2(!j.isEmpty(), "no summary");
    QVERIFY(j["ok"].toBool());
    const QImage image(shot);
    QVERIFY2(!image.isNull(), "screenshot missing");
    QVERIFY(image.width() >= 1000 && image.height() >= 700);
    const QJsonArray r = j["canvas"].toObject()["rect_in_window"].toArray();
    const QRect rect(r[0].toInt(), r[1].toInt(), r[2].toInt(), r[3].toInt());
    QVERIFY(rect.width() > 100 && image.rect().contains(rect));
    double stddev = 0;
    int colours = 0;
    regionStats(image, rect, &stddev, &colours);
    QVERIFY2(stddev > 8 && colours > 50, qPrintable(QStringLiteral("canvas looks blank: stddev %1, %2 colours").arg(stddev).arg(colours)));

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
    const QJsonObject j = runOnce({QStringLiteral("--compare"), QStringLiteral("full,linear:rho=0.25,streaming:rho=0.25")}, shot);
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
};

QTEST_GUILESS_MAIN(TestWindowE2E)
#include "test_window_e2e.moc"
