// View-model logic without widgets or a model: RunViewModel fed with synthetic
// engine events, the compare table, settings <-> request, history PNG round trip,
// and the torch-free catalogs the window is built from.
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/errors.h"
#include "engine/core/number_parsing.h"
#include "engine/image/png_file.h"
#include "engine/models/model_catalog.h"
#include "engine/session/generation_metadata.h"
#include "ui/render/overlay_images.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/generation_settings.h"
#include "ui/viewmodel/history_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/memory_panel.h"

using namespace kvs::ui;

namespace {

kvs::RgbImage patternImage(int w, int h, int seed) {
  kvs::RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<size_t>(w * h * 3));
  for (size_t i = 0; i < img.pixels.size(); ++i)
    img.pixels[i] = static_cast<uint8_t>((i * 7 + static_cast<size_t>(seed) * 31) % 251);
  return img;
}

// A 4x4 grid, 2 layers, 2 KV heads, 1 condition token.
UnitDonePtr unitEvent(int64_t unit, int64_t logical, int64_t full, std::vector<int64_t> retained, bool masks,
                      std::vector<int64_t> evicted = {0, 0}) {
  auto e = std::make_shared<kvs::UnitDoneEvent>();
  e->unit_index = unit;
  e->units_total = 4;
  e->elapsed_ms = 10.0 * static_cast<double>(unit + 1);
  e->kv_bytes_logical = logical;
  e->kv_bytes_full_equivalent = full;
  e->kv_bytes_peak = logical;
  e->policy = "full";
  e->retained_per_layer = std::move(retained);
  e->evicted_entries = evicted[0] + evicted[1];
  e->evicted_per_layer = std::move(evicted);
  e->process_resident_bytes = (100 + unit) * 1048576;
  e->process_peak_resident_bytes = 200 * 1048576;
  e->preview = std::vector<kvs::RgbImage>{patternImage(16, 16, static_cast<int>(unit))};
  if (masks) {
    kvs::RetainedMasks m;
    m.n_layer = 2;
    m.kv_heads = 2;
    m.positions = 17;
    m.bits.assign(static_cast<size_t>(2 * 2 * m.words()), 0);
    m.bits[0] = 0b11111;  // layer 0 head 0: 5 positions
    m.bits[1] = 0b111;    // layer 0 head 1: 3 positions
    e->retained = m;
  }
  return e;
}

}  // namespace

class TestViewModels : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void runViewModelFollowsARun() {
    RunViewModel vm;
    QSignalSpy states(&vm, &RunViewModel::stateChanged);
    kvs::GenerationRequest request;
    request.policy = kvs::parse_policy_spec("full");
    vm.track(nullptr, 7, request);
    QCOMPARE(vm.state(), RunState::Loading);
    QVERIFY(vm.active());
    vm.handleStarted(kvs::StartedEvent{"demo", "cpu", 1, 4, 4, 16, "line", 4, "llamagen", 1, {}, {}, {}});
    QCOMPARE(vm.state(), RunState::Running);
    QCOMPARE(vm.family().name, std::string("llamagen"));
    vm.handleProgress(kvs::TokenProgressEvent{4, 16, 10, 400});
    QCOMPARE(vm.fraction(), 0.25);
    QCOMPARE(vm.etaSeconds(), 12.0 / 400.0);
    QCOMPARE(vm.currentRow(), int64_t{1});
    // Line 0: 1 condition + 4 tokens per head; no eviction.
    vm.handleUnit(unitEvent(0, 100, 100, {10, 10}, false));
    QCOMPARE(vm.evictionsLastUnit(), (std::vector<int64_t>{0, 0}));
    QVERIFY(!vm.preview().isNull());
    QCOMPARE(vm.preview().size(), QSize(16, 16));
    // Line 1: the event reports 3 entries evicted from layer 0.
    vm.handleUnit(unitEvent(1, 150, 200, {15, 18}, true, {3, 0}));
    QCOMPARE(vm.evictionsLastUnit(), (std::vector<int64_t>{3, 0}));
    QCOMPARE(vm.evictionsPerUnit(), (std::vector<int64_t>{0, 3}));
    QCOMPARE(vm.retainedPerHead(0), (std::vector<int64_t>{5, 3}));
    QCOMPARE(vm.retainedPerHead(5), std::vector<int64_t>{});
    QCOMPARE(vm.memory().size(), size_t{2});
    QCOMPARE(vm.memory().back().kv_bytes_full, int64_t{200});
    // The process memory is the engine's, sent with the unit.
    QCOMPARE(vm.memory().back().process_bytes, int64_t{101 * 1048576});
    QCOMPARE(vm.memory().back().process_peak_bytes, int64_t{200 * 1048576});
    vm.handlePolicyChanged(kvs::PolicyChangedEvent{1, "linear:rho=1/4", true, ""});
    vm.handlePolicyChanged(kvs::PolicyChangedEvent{2, "linear:rho=1/4", false, "budget impossible"});
    QCOMPARE(vm.policyMarkers().size(), 2);
    QCOMPARE(vm.activePolicy(), QStringLiteral("linear:rho=1/4"));
    QVERIFY(!vm.policyMarkers()[1].accepted);

    auto result = std::make_shared<kvs::GenerationResult>();
    result->images = {patternImage(16, 16, 9)};
    result->tokens = {std::vector<int32_t>(16, 1)};
    result->policy = "linear:rho=1/4";
    result->tokens_per_second = 321;
    QSignalSpy finished(&vm, &RunViewModel::finished);
    vm.handleFinished(result);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(vm.state(), RunState::Finished);
    QCOMPARE(vm.fraction(), 1.0);
    QCOMPARE(vm.tokensPerSecond(), 321.0);
    QVERIFY(!vm.active());
    QVERIFY(states.count() >= 3);
  }

  void memoryPanelShowsDeviceMemoryOnGpuRuns() {
    RunViewModel vm;
    MemoryPanel panel;
    panel.setRun(&vm);
    vm.track(nullptr, 1, kvs::GenerationRequest{});
    vm.handleStarted(kvs::StartedEvent{"demo", "cpu (1 threads)", 1, 4, 4, 16, "line", 4, "llamagen", 1, {}, {}, {}});
    // A CPU run: no device numbers, and the panel says why.
    vm.handleUnit(unitEvent(0, 100, 100, {10, 10}, false));
    QCOMPARE(vm.memory().back().device_allocated_bytes, int64_t{-1});
    auto labelText = [&] {
      QString all;
      for (const QLabel* l : panel.findChildren<QLabel*>()) all += l->text();
      return all;
    };
    QVERIFY(labelText().contains(QStringLiteral("CPU run")));
    // The process line shows the memory the unit reported, not this process's own.
    QVERIFY2(labelText().contains(QStringLiteral("100.00 MiB")) && labelText().contains(QStringLiteral("200.00 MiB")),
             qPrintable(labelText()));
    auto silent = std::make_shared<kvs::UnitDoneEvent>(*unitEvent(1, 150, 200, {15, 18}, false));
    silent->process_resident_bytes.reset();
    vm.handleUnit(silent);
    QVERIFY2(labelText().contains(QStringLiteral("reported during a run")), qPrintable(labelText()));
    // A GPU run (as the sessions report it on CUDA): allocated, peak, reserved, total.
    auto gpu = std::make_shared<kvs::UnitDoneEvent>(*unitEvent(1, 150, 200, {15, 18}, false));
    kvs::DeviceMemoryStats d;
    d.available = true;
    d.device_index = 0;
    d.allocated_bytes = 3 * 1048576;
    d.peak_allocated_bytes = 5 * 1048576;
    d.reserved_bytes = 8 * 1048576;
    d.total_bytes = int64_t{80} * 1024 * 1048576;
    gpu->device_memory = d;
    vm.handleUnit(gpu);
    QCOMPARE(vm.memory().back().device_peak_bytes, int64_t{5 * 1048576});
    QCOMPARE(vm.memory().back().device_total_bytes, d.total_bytes);
    const QString text = labelText();
    QVERIFY2(text.contains(QStringLiteral("GPU")) && text.contains(QStringLiteral("5.00 MiB")) &&
                 !text.contains(QStringLiteral("CPU run")),
             qPrintable(text));
  }

  void memoryPanelChartsDeviceMemoryOnGpuRuns() {
    RunViewModel vm;
    MemoryPanel panel;
    panel.resize(420, 760);
    panel.setRun(&vm);
    auto* chart = panel.findChild<DeviceMemoryChart*>(QStringLiteral("deviceMemoryChart"));
    QVERIFY(chart);
    // A CPU run: no device series, and the chart stays hidden (the panel as before).
    vm.track(nullptr, 1, kvs::GenerationRequest{});
    vm.handleStarted(kvs::StartedEvent{"demo", "cpu (1 threads)", 1, 4, 4, 16, "line", 4, "llamagen", 1, {}, {}, {}});
    vm.handleUnit(unitEvent(0, 100, 100, {10, 10}, false));
    QVERIFY(chart->series().empty());
    QVERIFY(chart->isHidden());
    QVERIFY(deviceMemorySeries(vm.memory()).empty());

    // A GPU run: every unit carries the allocator's numbers.
    vm.reset();
    vm.track(nullptr, 2, kvs::GenerationRequest{});
    vm.handleStarted(
        kvs::StartedEvent{"demo", "cuda:1 (NVIDIA H100), bf16", 1, 4, 4, 16, "line", 4, "llamagen", 1, {}, {}, {}});
    const int64_t mib = 1048576;
    for (int64_t unit = 0; unit < 3; ++unit) {
      auto e = std::make_shared<kvs::UnitDoneEvent>(
          *unitEvent(unit, 100 * (unit + 1), 100 * (unit + 1), {10, 10}, false));
      e->kv_bytes_allocated = (unit + 1) * mib;
      kvs::DeviceMemoryStats d;
      d.available = true;
      d.device_index = 1;
      d.allocated_bytes = (40 + 4 * unit) * mib;
      d.peak_allocated_bytes = (50 + 4 * unit) * mib;
      d.reserved_bytes = 64 * mib;
      d.total_bytes = 80 * mib;
      e->device_memory = d;
      vm.handleUnit(e);
    }
    const std::vector<MemorySeries> series = chart->series();
    QStringList names;
    for (const MemorySeries& s : series) names << s.name;
    QCOMPARE(names, (QStringList{QStringLiteral("allocated"), QStringLiteral("reserved"), QStringLiteral("peak"),
                                 QStringLiteral("total"), QStringLiteral("KV cache")}));
    for (const MemorySeries& s : series) QCOMPARE(s.points.size(), 3);
    QCOMPARE(series[0].points[2], QPointF(2, 48.0 * mib));  // allocated after unit 2
    QCOMPARE(series[1].points[0].y(), 64.0 * mib);          // reserved
    QCOMPARE(series[2].points[1].y(), 54.0 * mib);          // peak
    QCOMPARE(series[3].points[0].y(), 80.0 * mib);          // the device's total
    QVERIFY(series[3].dashed);
    QCOMPARE(series[4].points[2].y(), 3.0 * mib);  // the KV cache beside them
    QVERIFY(!chart->isHidden());
    // Drawn: the allocated line's colour is in the chart's pixels.
    const QImage image = chart->grab().toImage();
    QVERIFY(!image.isNull());
    bool found = false;
    for (int y = 0; y < image.height() && !found; ++y)
      for (int x = 0; x < image.width() && !found; ++x) found = image.pixelColor(x, y) == series[0].color;
    QVERIFY2(found, "the allocated series is not drawn");
    // A later CPU run hides the chart again.
    vm.reset();
    vm.track(nullptr, 3, kvs::GenerationRequest{});
    vm.handleStarted(kvs::StartedEvent{"demo", "cpu (1 threads)", 1, 4, 4, 16, "line", 4, "llamagen", 1, {}, {}, {}});
    vm.handleUnit(unitEvent(0, 100, 100, {10, 10}, false));
    QVERIFY(chart->series().empty());
    QVERIFY(chart->isHidden());
  }

  void overlayRegionsAreThePolicysOwn() {
    // A 4x4 grid after one condition token; the regions as a unit event states
    // them (sequence positions), placed on the grid as they are.
    TokenGrid grid;
    grid.height = grid.width = 4;
    grid.condition_tokens = 1;
    grid.tokens_done = 8;  // lines 0-1 done, line 2 under way
    const std::vector<kvs::CacheRegion> stated = {{"middle", "mid (evicted by saliency)", 3, 5},
                                                  {"recent", "recent lines", 5, 9},
                                                  {"anchors", "anchors", 1, 3}};
    const QVector<PolicyRegion> regions = policyRegions(stated, grid);
    QCOMPARE(regions.size(), 4);
    QCOMPARE(regions[0].label, QStringLiteral("mid (evicted by saliency)"));
    QCOMPARE(regions[0].rects, (QVector<QRect>{QRect(2, 0, 2, 1)}));
    QCOMPARE(regions[1].label, QStringLiteral("recent lines"));
    QCOMPARE(regions[1].rects, (QVector<QRect>{QRect(0, 1, 4, 1)}));
    QCOMPARE(regions[2].rects, (QVector<QRect>{QRect(0, 0, 2, 1)}));
    QCOMPARE(regions[3].label, QStringLiteral("current line"));
    QCOMPARE(regions[3].rects, (QVector<QRect>{QRect(0, 2, 4, 1)}));
    // A region spanning lines wraps; sinks and anchors share their colour.
    const QVector<PolicyRegion> streaming =
        policyRegions({{"sinks", "sinks", 1, 3}, {"window", "recent window", 4, 11}}, grid);
    QCOMPARE(streaming[1].rects, (QVector<QRect>{QRect(3, 0, 1, 1), QRect(0, 1, 4, 1), QRect(0, 2, 2, 1)}));
    QCOMPARE(streaming[0].color, regions[2].color);
    QCOMPARE(streaming[1].color, regions[1].color);
    // No regions stated (full, H2O, ...): only the current line.
    QCOMPARE(policyRegions({}, grid).size(), 1);
  }

  void runViewModelCancelAndFailure() {
    RunViewModel vm;
    vm.track(nullptr, 1, {});
    vm.markCancelling();
    QCOMPARE(vm.state(), RunState::Cancelling);
    vm.handleFailed("generation cancelled", true);
    QCOMPARE(vm.state(), RunState::Cancelled);
    QVERIFY(vm.errorMessage().isEmpty());
    vm.track(nullptr, 2, {});
    vm.handleFailed("file x: broken", false);
    QCOMPARE(vm.state(), RunState::Failed);
    QCOMPARE(vm.errorMessage(), QStringLiteral("file x: broken"));
  }

  void compareRowsAgainstTheFullCache() {
    auto full = std::make_shared<kvs::GenerationResult>();
    full->images = {patternImage(32, 32, 1)};
    full->tokens = {{1, 2, 3, 4}};
    full->kv_bytes_logical_final = 1000;
    full->kv_bytes_full = 1000;
    full->tokens_per_second = 100;
    auto same = std::make_shared<kvs::GenerationResult>(*full);
    same->kv_bytes_logical_final = 250;
    auto other = std::make_shared<kvs::GenerationResult>(*full);
    other->images = {patternImage(32, 32, 2)};
    other->tokens = {{1, 2, 0, 0}};
    other->kv_bytes_logical_final = 500;
    const auto rows = CompareViewModel::computeRows({"full", "linear:rho=1/4", "streaming"}, {full, same, other},
                                                    familyDescription("llamagen"));
    QCOMPARE(rows.size(), 3);
    QVERIFY(rows[0].reference);
    QCOMPARE(rows[0].tokenAgreement, 1.0);
    QVERIFY(std::isinf(rows[1].psnr));
    QCOMPARE(rows[1].ssim, 1.0);
    QCOMPARE(rows[1].kvBytesFinal, int64_t{250});
    QCOMPARE(rows[2].tokenAgreement, 0.5);
    QVERIFY(std::isfinite(rows[2].psnr));
    QVERIFY(rows[2].ssim < 1.0);
    QCOMPARE(rows[2].policy, QStringLiteral("streaming"));
  }

  void compareValidatesItsConfigurations() {
    CompareViewModel vm(nullptr);
    kvs::GenerationRequest base;
    base.class_ids = {0};
    QVERIFY(!vm.start({"full"}, base, familyDescription("llamagen")).isEmpty());
    QVERIFY(!vm.start({"full", "linear", "streaming", "h2o", "snapkv"}, base, familyDescription("llamagen")).isEmpty());
    QVERIFY(vm.start({"full", "nosuchpolicy"}, base, familyDescription("llamagen")).contains("nosuchpolicy"));
    QVERIFY(vm.start({"linear:rho=1/4", "streaming:rho=1/4"}, base, familyDescription("llamagen")).isEmpty());
    QCOMPARE(vm.paneCount(), 3);
    QCOMPARE(vm.specs().front(), QStringLiteral("full"));
    QCOMPARE(vm.pane(1)->request().policy.text(), std::string("linear:rho=1/4"));
  }

  void settingsRoundTrip() {
    GenerationSettings s;
    s.modelDir = "/models/x";
    s.classId = 7;
    s.seed = 123456789012345ull;
    s.cfgScale = 2.5;
    s.temperature = 0.9;
    s.topK = 100;
    s.topP = 0.95;
    s.batch = 3;
    s.policy = "linear:rho=1/6";
    const kvs::GenerationRequest r = s.toRequest();
    QCOMPARE(r.class_ids, (std::vector<int64_t>{7, 7, 7}));
    QVERIFY(r.emit_retained_masks && r.emit_attention_map);
    QCOMPARE(r.preview_every_units, 1);
    QVERIFY(r.preview_max_share > 0);
    const GenerationSettings back = GenerationSettings::fromRequest(r);
    QCOMPARE(back.seed, s.seed);
    QCOMPARE(back.policy, s.policy);
    QCOMPARE(back.topK, s.topK);

    QTemporaryDir dir;
    QSettings q(dir.filePath("s.ini"), QSettings::IniFormat);
    s.seedMode = SeedMode::RandomEachRun;
    s.save(q);
    const GenerationSettings loaded = GenerationSettings::load(q, GenerationSettings{});
    QCOMPARE(loaded.seed, s.seed);
    QCOMPARE(loaded.classId, s.classId);
    QCOMPARE(loaded.policy, s.policy);
    QCOMPARE(loaded.batch, 3);
    QVERIFY(loaded.seedMode == SeedMode::RandomEachRun);
  }

  // Finishing a picture travels to the request and back (a recalled PNG brings
  // it back), but never into the settings file: a restart does not finish one.
  void finishingAPictureIsARequestNotASetting() {
    GenerationSettings s;
    s.modelDir = "/models/x";
    s.finishFrom = "/pictures/start.png";
    s.keepRows = 5;
    const kvs::GenerationRequest r = s.toRequest();
    QCOMPARE(r.from_image, std::string("/pictures/start.png"));
    QCOMPARE(r.keep_rows, int64_t{5});
    const GenerationSettings back = GenerationSettings::fromRequest(r);
    QCOMPARE(back.finishFrom, s.finishFrom);
    QCOMPARE(back.keepRows, int64_t{5});
    QTemporaryDir dir;
    QSettings q(dir.filePath("s.ini"), QSettings::IniFormat);
    s.save(q);
    QVERIFY(GenerationSettings::load(q, GenerationSettings{}).finishFrom.isEmpty());
    s.finishFrom.clear();
    QVERIFY(s.toRequest().from_image.empty());
  }

  // A finished run of two images (classes 3 and 5, seed 42, LineAR at 1/4) of a 24x24 model.
  static std::pair<kvs::GenerationRequest, ResultPtr> twoImageRun() {
    kvs::GenerationRequest request;
    request.model_path = "/models/demo";
    request.class_ids = {3, 5};
    request.seed = 42;
    request.cfg_scale = 3.0;
    request.policy = kvs::parse_policy_spec("linear:rho=1/4");
    auto result = std::make_shared<kvs::GenerationResult>();
    result->images = {patternImage(24, 24, 1), patternImage(24, 24, 2)};
    result->tokens = {std::vector<int32_t>(9, 1), std::vector<int32_t>(9, 2)};
    result->model_name = "demo";
    result->policy = "linear:rho=1/4";
    return {request, result};
  }

  void historySavesAndRecallsPng() {
    HistoryModel history;
    const auto [request, result] = twoImageRun();
    history.addResult(request, result, {"a", "b", "c", "tench", "e", "goldfish"});
    QCOMPARE(history.rowCount(), 2);
    QCOMPARE(history.entry(0).index, 0);
    QCOMPARE(history.entry(1).classId(), int64_t{5});
    QCOMPARE(history.entry(1).singleImageRequest().class_ids, std::vector<int64_t>{5});
    QVERIFY(history.data(history.index(0), Qt::ToolTipRole).toString().contains("seed 42"));

    QTemporaryDir dir;
    const QString path = dir.filePath("saved.png");
    history.savePng(1, path, "test");
    const kvs::RecalledImage back = kvs::read_generation_png(path.toStdString());
    QCOMPARE(back.class_id, int64_t{5});
    QCOMPARE(back.class_name, std::string("goldfish"));
    QCOMPARE(back.request.seed, uint64_t{42});
    QCOMPARE(back.request.cfg_scale, 3.0);
    QCOMPARE(back.request.policy.text(), std::string("linear:rho=1/4"));
    QCOMPARE(back.request.class_ids, std::vector<int64_t>{5});
    QCOMPARE(back.image.width, 24);
    QVERIFY(back.parameters_text.find("Seed: 42") != std::string::npos);

    // A PNG without KV Studio metadata is refused with a clear message.
    kvs::write_png(dir.filePath("plain.png").toStdString(), patternImage(4, 4, 0));
    QVERIFY_THROWS_EXCEPTION(kvs::FormatError, kvs::read_generation_png(dir.filePath("plain.png").toStdString()));
  }

  // The per-user gallery: images survive a new HistoryModel (a restart), are
  // searched by prompt, class, model or policy, deleted with their PNGs and
  // exported with their metadata.
  void historyKeepsImagesInTheGalleryAcrossARestart() {
    QTemporaryDir galleryDir;
    const auto [request, result] = twoImageRun();
    auto other = std::make_shared<kvs::GenerationResult>(*result);
    other->images = {patternImage(24, 24, 3)};
    other->tokens = {std::vector<int32_t>(9, 3)};
    other->policy = "streaming:rho=1/4";
    kvs::GenerationRequest otherRequest = request;
    otherRequest.class_ids = {1};
    otherRequest.seed = 7;
    otherRequest.policy = kvs::parse_policy_spec("streaming:rho=1/4");
    const std::vector<std::string> names = {"a", "b", "c", "tench", "e", "goldfish"};
    {
      HistoryModel history;
      QCOMPARE(history.openGallery(galleryDir.path(), "test"), QString());
      QVERIFY(history.hasGallery());
      QCOMPARE(history.rowCount(), 0);
      history.addResult(request, result, names, QStringLiteral("generated"), "llamagen");
      history.addResult(otherRequest, other, names, QStringLiteral("generated"), "llamagen");
      QCOMPARE(history.rowCount(), 3);
      QVERIFY(history.entry(0).galleryId > 0);
      QVERIFY(QFileInfo::exists(history.entry(0).pngPath));
    }
    HistoryModel reopened;
    QCOMPARE(reopened.openGallery(galleryDir.path(), "test"), QString());
    QCOMPARE(reopened.rowCount(), 3);
    // Newest first, each with its image and the request that recalls it.
    QCOMPARE(reopened.entry(0).request.seed, uint64_t{7});
    QCOMPARE(reopened.entry(0).image.width(), 24);
    QCOMPARE(reopened.entry(1).singleImageRequest().class_ids, std::vector<int64_t>{3});
    QCOMPARE(reopened.entry(2).className, QStringLiteral("goldfish"));
    reopened.setSearch(QStringLiteral("STREAMING"));
    QCOMPARE(reopened.rowCount(), 1);
    reopened.setSearch(QStringLiteral("goldfish"));
    QCOMPARE(reopened.rowCount(), 1);
    reopened.setSearch(QString());
    QCOMPARE(reopened.rowCount(), 3);
    QTemporaryDir out;
    const QStringList written = reopened.exportRows({0, 1}, out.path());
    QCOMPARE(written.size(), 2);
    QCOMPARE(kvs::read_generation_png(written[0].toStdString()).request.seed, uint64_t{7});
    const QString png = reopened.entry(0).pngPath;
    reopened.removeRows({0});
    QCOMPARE(reopened.rowCount(), 2);
    QVERIFY(!QFileInfo::exists(png));
    HistoryModel third;
    QCOMPARE(third.openGallery(galleryDir.path(), "test"), QString());
    QCOMPARE(third.rowCount(), 2);
    // A gallery that cannot be opened says why; the history then lives in memory.
    QTemporaryDir broken;
    QFile bad(broken.filePath("gallery.sqlite"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(QByteArray(4096, 'x'));
    bad.close();
    HistoryModel fallback;
    QVERIFY(!fallback.openGallery(broken.path(), "test").isEmpty());
    QVERIFY(!fallback.hasGallery());
    fallback.addResult(request, result, names);
    QCOMPARE(fallback.rowCount(), 2);
    fallback.setSearch(QStringLiteral("nothing like it"));
    QCOMPARE(fallback.rowCount(), 0);
    fallback.setSearch(QString());
    QCOMPARE(fallback.rowCount(), 2);
  }

  void policyCatalogDescribesEveryParameter() {
    const auto* linear = kvs::find_policy_entry("linear");
    QVERIFY(linear != nullptr);
    QVERIFY(linear->has_budget());
    QVERIFY(!kvs::find_policy_entry("full")->has_budget());
    for (const auto& entry : kvs::policy_catalog())
      for (const auto& p : entry.params) {
        QVERIFY2(!p.help.empty(), p.name.c_str());
        if (p.kind != kvs::PolicyParamKind::Choice) QVERIFY(p.minimum <= p.maximum);
      }
    QVERIFY(kvs::policy_spec_problem("linear:rho=1/6").empty());
    QVERIFY(!kvs::policy_spec_problem("linear:bogus=1").empty());
    QCOMPARE(*kvs::parse_number_text("1/4"), 0.25);
    QCOMPARE(kvs::parse_policy_spec("linear:r=2,n_init=4").text(), std::string("linear:n_init=4,r=2"));
  }

  void modelCatalogListsBundlesAndProblems() {
    QTemporaryDir dir;
    QDir(dir.path()).mkpath("broken");
    std::ofstream(dir.filePath("broken/model.json").toStdString()) << "{ not json";
    const auto models = kvs::find_model_bundles({KVSTUDIO_DEMO_MODEL, dir.path().toStdString()});
    QCOMPARE(models.size(), size_t{2});
    QVERIFY2(models[0].usable(), models[0].problem.c_str());
    QCOMPARE(models[0].name, std::string("llamagen-demo"));
    QCOMPARE(models[0].grid, int64_t{16});
    QVERIFY(models[0].kv_bytes_per_token > 0);
    QVERIFY(!models[1].usable());
  }
};

QTEST_MAIN(TestViewModels)
#include "test_view_models.moc"
