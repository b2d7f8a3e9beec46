// kvstudio: the KV Studio window.
//   kvstudio [--model DIR] [--threads N] [--generate]
//   kvstudio --run-once [--policy SPEC] [--compare P1,P2,...] [--compare-schedule auto|together|one-after-another]
//            [--switch-policy SPEC[@LINE]]
//            [--debug-overlay] [--capture-line N] [--attention L:H] --screenshot FILE [--summary FILE]
#include <QApplication>
#include <QCommandLineParser>
#include <QPalette>
#include <QStyleFactory>
#include <QSurfaceFormat>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "app/cli/default_paths.h"
#include "app/gui/run_once.h"
#include "engine/cache/policies/policy_list.h"
#include "engine/core/crash_backtrace.h"
#include "engine/core/cuda_backend.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/gallery/gallery_location.h"
#include "ui/bridge/engine_types.h"
#include "ui/widgets/main_window.h"
#include "ui/widgets/parameter_panel.h"

namespace {

void applyDarkTheme(QApplication& app) {
  app.setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette p;
  const QColor window(34, 37, 43), base(24, 26, 31), text(220, 223, 230), mid(60, 64, 74);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(30, 33, 39));
  p.setColor(QPalette::ToolTipBase, QColor(45, 49, 57));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(44, 48, 56));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(255, 120, 120));
  p.setColor(QPalette::Highlight, QColor(47, 129, 247));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Mid, mid);
  p.setColor(QPalette::Dark, QColor(20, 22, 26));
  p.setColor(QPalette::PlaceholderText, QColor(130, 136, 148));
  p.setColor(QPalette::Disabled, QPalette::Text, QColor(120, 124, 134));
  p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(120, 124, 134));
  p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(120, 124, 134));
  app.setPalette(p);
  app.setStyleSheet(
      QStringLiteral("QDockWidget::title{background:#2a2e36;padding:4px 8px;color:#c9d1d9}"
                     "QGroupBox{border:1px solid #3a3f4b;border-radius:6px;margin-top:14px;padding-top:6px}"
                     "QGroupBox::title{subcontrol-origin:margin;left:8px;padding:0 4px;color:#c9d1d9;font-weight:bold}"
                     "QTabBar::tab{padding:6px 16px}"
                     "QToolTip{border:1px solid #3a3f4b}"));
}

}  // namespace

int main(int argc, char** argv) {
  kvs::install_crash_backtrace("kvstudio");
  // Dear ImGui's OpenGL 3 backend needs a core profile (docs/design.md#build-facts).
  QSurfaceFormat format;
  format.setVersion(3, 3);
  format.setProfile(QSurfaceFormat::CoreProfile);
  QSurfaceFormat::setDefaultFormat(format);

  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("KVStudio"));
  QApplication::setApplicationName(QStringLiteral("kvstudio"));
  // Desktops match the window to its menu entry and icon (installer/linux).
  QGuiApplication::setDesktopFileName(QStringLiteral("org.kvstudio.KVStudio"));
  QApplication::setApplicationVersion(QStringLiteral(KVSTUDIO_VERSION));
  kvs::ui::registerEngineMetaTypes();

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QStringLiteral("KV Studio: autoregressive image generation with a compressed, visible KV cache"));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption model({QStringLiteral("model")},
                                 QStringLiteral("Model bundle folder (default: the last used, else the demo)"),
                                 QStringLiteral("DIR"));
  const QCommandLineOption threads({QStringLiteral("threads")},
                                   QStringLiteral("CPU threads for generation (default: all cores)"),
                                   QStringLiteral("N"), QStringLiteral("0"));
  const QCommandLineOption runOnce({QStringLiteral("run-once")},
                                   QStringLiteral("Generate (or compare) with the defaults, save a screenshot, exit"));
  const QCommandLineOption policy({QStringLiteral("policy")},
                                  QStringLiteral("Policy spec for --run-once, e.g. linear:rho=0.25"),
                                  QStringLiteral("SPEC"));
  const QCommandLineOption compare({QStringLiteral("compare")},
                                   QStringLiteral("Compare these policy specs (comma-separated) in --run-once"),
                                   QStringLiteral("LIST"));
  const QCommandLineOption compareSchedule({QStringLiteral("compare-schedule")},
                                           QStringLiteral(
                                               "Compare panes: auto (at once on a GPU), together or one-after-another"),
                                           QStringLiteral("WHEN"));
  const QCommandLineOption switchPolicy(
      {QStringLiteral("switch-policy")},
      QStringLiteral("In --run-once, switch to SPEC while generating, after line LINE (default 4)"),
      QStringLiteral("SPEC[@LINE]"));
  const QCommandLineOption screenshot({QStringLiteral("screenshot")},
                                      QStringLiteral("Where --run-once saves the window (PNG)"),
                                      QStringLiteral("FILE"));
  const QCommandLineOption summary({QStringLiteral("summary")},
                                   QStringLiteral(
                                       "Where --run-once writes its JSON summary (default: next to the screenshot)"),
                                   QStringLiteral("FILE"));
  const QCommandLineOption debugOverlay({QStringLiteral("debug-overlay")},
                                        QStringLiteral("Show the F12 debug overlay"));
  const QCommandLineOption differences({QStringLiteral("differences")},
                                       QStringLiteral("Compare: show difference heatmaps against the full cache"));
  const QCommandLineOption captureLine({QStringLiteral("capture-line")},
                                       QStringLiteral("In --run-once, take the screenshot when line N arrives"),
                                       QStringLiteral("N"), QStringLiteral("0"));
  const QCommandLineOption seed({QStringLiteral("seed")}, QStringLiteral("Seed"), QStringLiteral("N"));
  const QCommandLineOption classId({QStringLiteral("class")}, QStringLiteral("Class id"), QStringLiteral("N"));
  const QCommandLineOption prompt({QStringLiteral("prompt")}, QStringLiteral("Text models: the prompt"),
                                  QStringLiteral("TEXT"));
  const QCommandLineOption negativePrompt({QStringLiteral("negative-prompt")},
                                          QStringLiteral("Text models: the negative prompt (default: the model's own)"),
                                          QStringLiteral("TEXT"));
  const QCommandLineOption imageSize({QStringLiteral("image-size")},
                                     QStringLiteral("Models that write several sizes (Lumina-mGPT): the image size"),
                                     QStringLiteral("WxH"));
  const QCommandLineOption from({QStringLiteral("from")},
                                QStringLiteral("Raster models with a VQ encoder: finish this PNG (with --keep-rows)"),
                                QStringLiteral("PNG"));
  const QCommandLineOption keepRows({QStringLiteral("keep-rows")},
                                    QStringLiteral("With --from: the picture's top token rows that are given"),
                                    QStringLiteral("K"));
  const QCommandLineOption steps({QStringLiteral("steps")}, QStringLiteral("Masked (MAR) models: decoding steps"),
                                 QStringLiteral("N"));
  const QCommandLineOption timeout({QStringLiteral("timeout")},
                                   QStringLiteral("--run-once gives up after this many seconds (default 300)"),
                                   QStringLiteral("S"), QStringLiteral("300"));
  const QCommandLineOption size({QStringLiteral("size")}, QStringLiteral("Window size WxH"), QStringLiteral("WxH"));
  const QCommandLineOption tab({QStringLiteral("tab")},
                               QStringLiteral("In --run-once, the tab to screenshot: generate, compare or history"),
                               QStringLiteral("NAME"));
  const QCommandLineOption attention(
      {QStringLiteral("attention")},
      QStringLiteral("Layer and KV head of the attention map and retained mask, e.g. 3:4 (default: mean over all)"),
      QStringLiteral("LAYER:HEAD"));
  const QCommandLineOption generateNow({QStringLiteral("generate")},
                                       QStringLiteral("Start generating as soon as the window opens"));
  parser.addOptions({model,           threads,      runOnce,     policy,  compare,
                     compareSchedule, switchPolicy, screenshot,  summary, debugOverlay,
                     differences,     captureLine,  seed,        classId, steps,
                     timeout,         size,         generateNow, tab,     attention});
  parser.addOptions({prompt, negativePrompt, imageSize, from, keepRows});
  parser.process(app);

  if (parser.isSet(runOnce) && !parser.isSet(screenshot)) {
    std::fprintf(stderr, "kvstudio: --run-once needs --screenshot FILE\n");
    return 2;
  }
  QStringList compareSpecs;
  if (parser.isSet(compare)) {
    try {
      for (const std::string& s : kvs::split_policy_list(parser.value(compare).toStdString()))
        compareSpecs << QString::fromStdString(s);
    } catch (const kvs::Error& e) {
      std::fprintf(stderr, "kvstudio: --compare: %s\n", e.what());
      return 2;
    }
  }
  std::optional<kvs::ui::CompareSchedulePreference> schedule;
  if (parser.isSet(compareSchedule)) {
    bool ok = false;
    schedule = kvs::ui::parseCompareSchedulePreference(parser.value(compareSchedule), &ok);
    if (!ok) {
      std::fprintf(stderr,
                   "kvstudio: --compare-schedule: unknown value '%s' (expected auto, together or one-after-another)\n",
                   qPrintable(parser.value(compareSchedule)));
      return 2;
    }
  }
  applyDarkTheme(app);
  // Which device "auto" uses and why (the CUDA part is a package of its own).
  std::fprintf(stderr, "kvstudio: device auto: %s\n", kvs::describe_auto_device().c_str());

  kvs::ui::MainWindowOptions options;
  options.compareSchedule = schedule;
  options.bundledDemo = QString::fromStdString(kvs::cli::default_model_path());
  options.model = parser.value(model);
  options.threads = parser.value(threads).toInt();
  options.useSettings = !parser.isSet(runOnce);
  // Every image goes into the per-user gallery (KVSTUDIO_GALLERY=off: this
  // session's history only, as `generate --no-gallery` for the CLI).
  if (qEnvironmentVariable("KVSTUDIO_GALLERY") != QStringLiteral("off")) {
    try {
      options.galleryDir = QString::fromStdString(kvs::default_gallery_dir());
    } catch (const kvs::Error& e) {
      std::fprintf(stderr, "kvstudio: no gallery: %s\n", e.what());
    }
  }
  kvs::ui::MainWindow window(options);
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split(QLatin1Char('x'));
    if (wh.size() == 2) window.resize(wh[0].toInt(), wh[1].toInt());
  } else if (parser.isSet(runOnce)) {
    window.resize(1500, 920);
  }
  // The open model's conditioning decides which of --class and --prompt apply.
  const bool textModel = window.parameters()->takesPrompt();
  if ((parser.isSet(prompt) || parser.isSet(negativePrompt)) && !textModel) {
    std::fprintf(stderr, "kvstudio: model %s is class-conditional: give --class N, not a prompt\n",
                 window.model().name.c_str());
    return 2;
  }
  if (parser.isSet(classId) && textModel) {
    std::fprintf(stderr, "kvstudio: model %s is a text-to-image model: give --prompt \"...\", not a class\n",
                 window.model().name.c_str());
    return 2;
  }
  if (parser.isSet(from) != parser.isSet(keepRows)) {
    std::fprintf(stderr, "kvstudio: --from PNG and --keep-rows K go together\n");
    return 2;
  }
  if (parser.isSet(from) && !window.model().finishes_pictures) {
    std::fprintf(stderr,
                 "kvstudio: model %s cannot finish a picture (a raster model whose bundle ships its VQ encoder can)\n",
                 window.model().name.c_str());
    return 2;
  }
  if (parser.isSet(keepRows)) {
    bool ok = false;
    const long long rows = parser.value(keepRows).toLongLong(&ok), grid = window.model().grid;
    if (!ok || rows < 1 || rows >= grid) {
      std::fprintf(stderr, "kvstudio: --keep-rows must be 1 to %lld: model %s draws %lld token rows\n", grid - 1,
                   window.model().name.c_str(), grid);
      return 2;
    }
  }
  if (parser.isSet(seed) || parser.isSet(classId) || parser.isSet(steps) || parser.isSet(prompt) ||
      parser.isSet(negativePrompt) || parser.isSet(imageSize) || parser.isSet(from)) {
    kvs::ui::GenerationSettings s = window.parameters()->settings();
    if (parser.isSet(prompt)) s.prompt = parser.value(prompt);
    if (parser.isSet(negativePrompt)) {
      s.negativePrompt = parser.value(negativePrompt);
      s.negativePromptEnabled = true;
    }
    if (parser.isSet(seed)) s.seed = parser.value(seed).toULongLong();
    if (parser.isSet(classId)) s.classId = parser.value(classId).toLongLong();
    if (parser.isSet(steps)) s.steps = parser.value(steps).toLongLong();
    if (parser.isSet(from)) {
      s.finishFrom = parser.value(from);
      s.keepRows = parser.value(keepRows).toLongLong();
    }
    if (parser.isSet(imageSize)) {
      const auto& sizes = window.model().image_sizes;
      const std::string asked = parser.value(imageSize).toStdString();
      if (std::find(sizes.begin(), sizes.end(), asked) == sizes.end()) {
        std::string offered;
        for (const std::string& size : sizes) offered += (offered.empty() ? "" : ", ") + size;
        std::fprintf(stderr, "kvstudio: model %s does not offer the image size %s (%s)\n", window.model().name.c_str(),
                     asked.c_str(), offered.empty() ? "it writes one size" : ("offered: " + offered).c_str());
        return 2;
      }
      s.imageSize = parser.value(imageSize);
    }
    window.parameters()->setSettings(s);
  }
  if (parser.isSet(attention)) {
    const QStringList lh = parser.value(attention).split(QLatin1Char(':'));
    bool okLayer = false, okHead = lh.size() == 2;
    const int64_t layer = lh.value(0).toLongLong(&okLayer), head = okHead ? lh.value(1).toLongLong(&okHead) : -1;
    if (!okLayer || !okHead || !window.selectLayerHead(layer, head)) {
      std::fprintf(stderr,
                   "kvstudio: --attention: '%s' is not LAYER:HEAD of the open model (%lld layers, %lld KV heads)\n",
                   qPrintable(parser.value(attention)), static_cast<long long>(window.model().n_layer),
                   static_cast<long long>(window.model().kv_heads));
      return 2;
    }
  }
  window.show();

  if (!parser.isSet(runOnce)) {
    if (parser.isSet(generateNow)) QTimer::singleShot(300, &window, [&window] { window.generate(); });
    return app.exec();
  }

  kvs::gui::RunOnceOptions ro;
  ro.screenshot = parser.value(screenshot);
  ro.summary = parser.value(summary);
  ro.policy = parser.value(policy);
  ro.compare = compareSpecs;
  if (parser.isSet(switchPolicy)) {
    const QString v = parser.value(switchPolicy);
    const int at = v.lastIndexOf(QLatin1Char('@'));
    ro.switchPolicy = at >= 0 ? v.left(at) : v;
    if (at >= 0) ro.switchAtLine = v.mid(at + 1).toInt();
  }
  ro.captureLine = parser.value(captureLine).toInt();
  ro.debugOverlay = parser.isSet(debugOverlay);
  ro.differences = parser.isSet(differences);
  ro.timeoutSeconds = parser.value(timeout).toInt();
  if (parser.isSet(tab))
    ro.tab = QStringList{QStringLiteral("generate"), QStringLiteral("compare"), QStringLiteral("history")}.indexOf(
        parser.value(tab));
  kvs::gui::RunOnce driver(&window, ro);
  QTimer::singleShot(200, &driver, &kvs::gui::RunOnce::start);
  return app.exec();
}
