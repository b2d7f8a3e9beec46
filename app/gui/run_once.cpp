#include "app/gui/run_once.h"

#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPixmap>
#include <QTableWidget>
#include <QTimer>

#include <cmath>
#include <cstdio>

#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/compare_view.h"
#include "ui/widgets/debug_overlay.h"
#include "ui/widgets/error_banner.h"
#include "ui/widgets/generation_canvas.h"
#include "ui/widgets/main_window.h"
#include "ui/widgets/parameter_panel.h"

namespace kvs::gui {
namespace {

// Standard deviation of the grey level: a blank (one-colour) canvas gives ~0.
double greyStddev(const QImage& image) {
  if (image.isNull()) return 0;
  const QImage g = image.convertToFormat(QImage::Format_Grayscale8);
  double sum = 0, sum2 = 0;
  const double n = static_cast<double>(g.width()) * g.height();
  for (int y = 0; y < g.height(); ++y) {
    const uchar* row = g.constScanLine(y);
    for (int x = 0; x < g.width(); ++x) {
      sum += row[x];
      sum2 += static_cast<double>(row[x]) * row[x];
    }
  }
  const double mean = sum / n;
  return std::sqrt(std::max(0.0, sum2 / n - mean * mean));
}

QJsonValue finiteOrNull(double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(); }

}  // namespace

RunOnce::RunOnce(kvs::ui::MainWindow* window, RunOnceOptions options, QObject* parent)
    : QObject(parent), window_(window), options_(std::move(options)) {
  if (options_.summary.isEmpty()) {
    QFileInfo info(options_.screenshot);
    options_.summary = info.dir().filePath(info.completeBaseName() + QStringLiteral(".json"));
  }
}

void RunOnce::start() {
  QTimer::singleShot(options_.timeoutSeconds * 1000, this,
                     [this] { finish(false, QStringLiteral("timed out after %1 s").arg(options_.timeoutSeconds)); });
  if (options_.debugOverlay) window_->setDebugOverlayVisible(true);
  auto settle = [this](bool ok) {
    // Let queued events land and the last frame paint before the screenshot.
    QTimer::singleShot(600, this, [this, ok] { finish(ok, ok ? QString() : window_->banner()->message()); });
  };
  if (!options_.compare.isEmpty()) {
    connect(window_, &kvs::ui::MainWindow::compareFinished, this, settle);
    if (options_.differences) {
      // The checkbox lives in the compare view; flip it through its object tree.
      for (auto* box : window_->compareView()->findChildren<QCheckBox*>()) box->setChecked(true);
    }
    if (!window_->runCompare(options_.compare)) finish(false, window_->banner()->message());
    return;
  }
  // The same check as a person choosing a policy: one of another family (a
  // raster-only policy on a VAR model) shows the error banner and fails the run.
  if (!options_.policy.isEmpty() && !window_->setPolicySpec(options_.policy)) {
    finish(false, window_->banner()->message());
    return;
  }
  connect(window_->run(), &kvs::ui::RunViewModel::unitChanged, this, &RunOnce::onUnit);
  connect(window_, &kvs::ui::MainWindow::runFinished, this, settle);
  if (!window_->generate()) finish(false, window_->banner()->message());
}

void RunOnce::onUnit() {
  const auto& unit = window_->run()->lastUnit();
  if (!unit) return;
  const int line = static_cast<int>(unit->unit_index) + 1;
  if (!options_.switchPolicy.isEmpty() && !switched_ && line >= options_.switchAtLine) {
    switched_ = true;
    // The same path as a person editing the policy panel mid-run.
    window_->parameters()->setPolicySpec(options_.switchPolicy);
  }
  if (options_.captureLine > 0 && !captured_ && line >= options_.captureLine) capture();
}

bool RunOnce::capture() {
  captured_ = true;
  auto* canvas = window_->canvas();
  const QImage canvasImage = canvas->grab(canvas->imageRect()).toImage();
  canvas_stddev_ = greyStddev(canvasImage);
  canvas_nonblank_ = canvas_stddev_ > 4.0;
  if (!options_.compare.isEmpty()) {
    double best = 0;
    for (int i = 0; i < window_->compare()->paneCount(); ++i)
      best = std::max(best, greyStddev(window_->compare()->pane(i)->preview()));
    canvas_stddev_ = best;
    canvas_nonblank_ = best > 4.0;
  }
  const QPixmap shot = window_->grab();
  QDir().mkpath(QFileInfo(options_.screenshot).absolutePath());
  const bool saved = shot.save(options_.screenshot, "PNG");
  if (!saved) std::fprintf(stderr, "kvstudio: cannot write screenshot %s\n", qPrintable(options_.screenshot));
  return saved;
}

QJsonObject RunOnce::summary(bool ok, const QString& message) const {
  QJsonObject j;
  j["ok"] = ok;
  j["message"] = message;
  j["mode"] = options_.compare.isEmpty() ? "generate" : "compare";
  j["model_family"] = QString::fromStdString(window_->model().family);
  j["screenshot"] = QFileInfo(options_.screenshot).absoluteFilePath();
  j["window"] = QJsonArray{window_->width(), window_->height()};
  // Where the image is in the screenshot, so a test can check those pixels itself.
  const QRect image = window_->canvas()->imageRect();
  const QPoint topLeft = window_->canvas()->mapTo(window_, image.topLeft());
  j["canvas"] = QJsonObject{{"stddev", canvas_stddev_},
                            {"nonblank", canvas_nonblank_},
                            {"visible", window_->canvas()->isVisible()},
                            {"rect_in_window", QJsonArray{topLeft.x(), topLeft.y(), image.width(), image.height()}}};
  auto runJson = [](const kvs::ui::RunViewModel* r) {
    QJsonObject o;
    o["state"] = kvs::ui::runStateText(r->state());
    o["tokens_done"] = static_cast<qint64>(r->tokensDone());
    o["tokens_total"] = static_cast<qint64>(r->tokensTotal());
    o["units"] = static_cast<qint64>(r->unitsDone());
    o["units_total"] = static_cast<qint64>(r->unitsTotal());
    o["unit_name"] = QString::fromStdString(r->started().unit_name);
    o["progress_text"] = r->unitProgressText();
    o["family"] = kvs::ui::unitNoun(r->family());
    o["tokens_per_second"] = r->tokensPerSecond();
    o["policy_final"] = r->activePolicy();
    QJsonArray markers;
    for (const auto& m : r->policyMarkers())
      markers.append(
          QJsonObject{{"unit", static_cast<qint64>(m.unit)}, {"policy", m.policy}, {"accepted", m.accepted}});
    o["policy_markers"] = markers;
    const auto& mem = r->memory();
    QJsonObject memory;
    memory["samples"] = static_cast<qint64>(mem.size());
    if (!mem.empty()) {
      memory["kv_first"] = static_cast<qint64>(mem.front().kv_bytes_logical);
      memory["kv_last"] = static_cast<qint64>(mem.back().kv_bytes_logical);
      memory["kv_full_last"] = static_cast<qint64>(mem.back().kv_bytes_full);
      memory["kv_peak"] = static_cast<qint64>(mem.back().kv_bytes_peak);
      memory["process_bytes"] = static_cast<qint64>(mem.back().process_bytes);
      memory["gauge_moved"] = mem.size() >= 2 && mem.back().kv_bytes_logical != mem.front().kv_bytes_logical;
      memory["below_full"] = mem.back().kv_bytes_logical < mem.back().kv_bytes_full;
      double flops = 0;
      int64_t reused_steps = 0;
      for (const auto& s : mem) {
        flops += s.flops;
        if (s.recomputed_tokens >= 0 && s.recomputed_tokens < r->started().grid_height * r->started().grid_width)
          ++reused_steps;
      }
      memory["flops_total"] = flops;
      memory["steps_with_reused_tokens"] = static_cast<qint64>(reused_steps);
    } else {
      memory["gauge_moved"] = false;
      memory["below_full"] = false;
    }
    o["memory"] = memory;
    return o;
  };
  if (options_.compare.isEmpty()) {
    j["run"] = runJson(window_->run());
  } else {
    QJsonObject c;
    QJsonArray panes, rows;
    for (int i = 0; i < window_->compare()->paneCount(); ++i) panes.append(runJson(window_->compare()->pane(i)));
    for (const auto& row : window_->compare()->rows())
      rows.append(QJsonObject{{"policy", row.policy},
                              {"reference", row.reference},
                              {"kv_bytes_final", static_cast<qint64>(row.kvBytesFinal)},
                              {"kv_bytes_full", static_cast<qint64>(row.kvBytesFull)},
                              {"kv_bytes_peak", static_cast<qint64>(row.kvBytesPeak)},
                              {"tokens_per_second", row.tokensPerSecond},
                              {"token_agreement", finiteOrNull(row.tokenAgreement)},
                              {"psnr", finiteOrNull(row.psnr)},
                              {"identical", std::isinf(row.psnr)},
                              {"ssim", finiteOrNull(row.ssim)},
                              {"flops", row.flops}});
    c["panes"] = panes;
    c["rows"] = rows;
    c["schedule"] = window_->compare()->schedule() == kvs::ui::CompareSchedule::Together ? "together"
                                                                                         : "one-after-another";
    c["max_panes_streaming_at_once"] = window_->compare()->maxPanesStreamingAtOnce();
    c["table_rows"] = window_->compareView()->findChild<QTableWidget*>(QStringLiteral("compareTable")) ? rows.size()
                                                                                                       : 0;
    j["compare"] = c;
  }
  auto* debug = window_->debugOverlay();
  j["debug_overlay"] = QJsonObject{{"visible", window_->debugOverlayVisible()},
                                   {"frames", debug ? debug->framesRendered() : 0}};
  return j;
}

void RunOnce::finish(bool ok, const QString& message) {
  if (done_) return;
  done_ = true;
  if (options_.tab >= 0) {
    window_->showTab(options_.tab);
    QCoreApplication::processEvents();
  }
  if (!captured_ || options_.captureLine <= 0) ok = capture() && ok;
  QFile f(options_.summary);
  if (f.open(QIODevice::WriteOnly | QIODevice::Truncate)) f.write(QJsonDocument(summary(ok, message)).toJson());
  else std::fprintf(stderr, "kvstudio: cannot write %s\n", qPrintable(options_.summary));
  if (!ok)
    std::fprintf(stderr, "kvstudio --run-once failed: %s\n",
                 qPrintable(message.isEmpty() ? QStringLiteral("see the log") : message));
  else std::printf("%s\n", qPrintable(QFileInfo(options_.screenshot).absoluteFilePath()));
  std::fflush(stdout);
  window_->close();
  QCoreApplication::exit(ok ? 0 : 1);
}

}  // namespace kvs::gui
