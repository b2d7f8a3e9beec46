// The view-model side of the next-scale (VAR) and masked (MAR) families, fed
// with hand-made engine events: progress in scales / steps, the evictions the
// events report per scale, the scale-to-scale attention mass and the per-scale cached share,
// MAR's generation order, recomputed tokens and FLOPs, the policies offered per
// family and the compare table's columns.
#include <QtTest>

#include <cmath>

#include "engine/cache/policies/policy_catalog.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/viewmodel/model_family.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/viewmodel/scale_maps.h"

using namespace kvs::ui;

namespace {

kvs::RgbImage flatImage(int side, uint8_t v) {
  kvs::RgbImage img;
  img.width = img.height = side;
  img.pixels.assign(static_cast<size_t>(side * side * 3), v);
  return img;
}

// A VAR with scales 1x1, 2x2, 3x3 (14 positions), 2 layers, 2 KV heads.
kvs::ModelSummary varSummary() {
  kvs::ModelSummary m;
  m.family = "var";
  m.n_layer = 2;
  m.kv_heads = 2;
  m.grid = 3;
  m.condition_tokens = 0;
  m.scale_sides = {1, 2, 3};
  return m;
}

kvs::RetainedMasks masksKeeping(int64_t positions,
                                const std::vector<std::pair<int64_t, int64_t>>& kept_per_layer_head_range) {
  kvs::RetainedMasks m;
  m.n_layer = 2;
  m.kv_heads = 2;
  m.positions = positions;
  m.bits.assign(static_cast<size_t>(2 * 2 * m.words()), 0);
  // One [begin, end) range of kept positions per (layer, head), in layer-major order.
  for (size_t lh = 0; lh < kept_per_layer_head_range.size(); ++lh)
    for (int64_t p = kept_per_layer_head_range[lh].first; p < kept_per_layer_head_range[lh].second; ++p)
      m.bits[lh * static_cast<size_t>(m.words()) + static_cast<size_t>(p / 64)] |= uint64_t{1} << (p % 64);
  return m;
}

UnitDonePtr scaleUnit(int64_t scale, const kvs::RetainedMasks& masks, std::vector<float> attention,
                      std::vector<int64_t> evicted = {0, 0}) {
  auto e = std::make_shared<kvs::UnitDoneEvent>();
  e->unit_index = scale;
  e->units_total = 3;
  e->elapsed_ms = 5.0 * static_cast<double>(scale + 1);
  e->policy = "heatkv:budget=0.5";
  std::vector<int64_t> per_layer(2, 0);
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t p = 0; p < masks.positions; ++p)
        per_layer[static_cast<size_t>(l)] += masks.retained(l, h, p) ? 1 : 0;
  e->retained_per_layer = per_layer;
  e->retained = masks;
  e->evicted_entries = evicted[0] + evicted[1];
  e->evicted_per_layer = std::move(evicted);
  kvs::AttentionMap a;
  a.positions = 14;
  a.weights = std::move(attention);
  e->attention = a;
  e->preview = std::vector<kvs::RgbImage>{flatImage(12, static_cast<uint8_t>(40 * (scale + 1)))};
  return e;
}

}  // namespace

class TestFamilyViewModels : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void scaleLayoutMapsPositionsToScales() {
    const ScaleLayout l{{1, 2, 3}, {}};
    QCOMPARE(l.total(), int64_t{14});
    QCOMPARE(l.begin(2), int64_t{5});
    QCOMPARE(l.scaleOf(0), int64_t{0});
    QCOMPARE(l.scaleOf(4), int64_t{1});
    QCOMPARE(l.scaleOf(5), int64_t{2});
    QCOMPARE(l.scaleOf(13), int64_t{2});
    QCOMPARE(l.scaleOf(14), int64_t{-1});
  }

  void scaleRunStreamsScaleByScale() {
    RunViewModel run;
    run.setModel(varSummary());
    QCOMPARE(run.family().name, std::string("var"));
    QCOMPARE(run.family().unit, kvs::GenerationUnit::Scale);
    run.setCalibrationPending(&run.family().calibrated_on_first_use.at(0));
    run.track(nullptr, 1, kvs::GenerationRequest{});
    QVERIFY(run.calibrating());  // loading, no scale yet
    run.handleStarted(kvs::StartedEvent{"var", "cpu", 1, 3, 3, 14, "scale", 3, "var", 0, {}, {}, {}});
    QVERIFY(run.calibrating());
    QCOMPARE(run.unitProgressText(), QStringLiteral("scale 1/3"));

    // Scale 0 (1 token) and scale 1 (4 tokens): everything kept.
    run.handleUnit(
        scaleUnit(0, masksKeeping(14, {{0, 1}, {0, 1}, {0, 1}, {0, 1}}), {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    QVERIFY(!run.calibrating());
    QCOMPARE(run.unitProgressText(), QStringLiteral("scale 2/3"));
    QCOMPARE(run.evictionsPerUnit().back(), int64_t{0});
    run.handleUnit(scaleUnit(1, masksKeeping(14, {{0, 5}, {0, 5}, {0, 5}, {0, 5}}),
                             {0.5f, 0.125f, 0.125f, 0.125f, 0.125f, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    QCOMPARE(run.evictionsPerUnit().back(), int64_t{0});
    // Scale 2 (9 tokens): layer 0 head 1 and layer 1 head 0 drop scales 0 and 1
    // (5 entries each), as the event reports.
    run.handleUnit(scaleUnit(2, masksKeeping(14, {{0, 14}, {5, 14}, {5, 14}, {0, 14}}),
                             {0.2f, 0, 0, 0, 0.2f, 0.2f, 0, 0, 0, 0, 0, 0, 0, 0.4f}, {5, 5}));
    QCOMPARE(run.unitsDone(), int64_t{3});
    QCOMPARE(run.unitsTotal(), int64_t{3});
    QCOMPARE(run.unitProgressText(), QStringLiteral("scale 3/3"));
    QCOMPARE(run.evictionsLastUnit(), (std::vector<int64_t>{5, 5}));
    QCOMPARE(run.evictionsPerUnit().back(), int64_t{10});
    QCOMPARE(run.memory().size(), size_t{3});
    QCOMPARE(run.preview().pixelColor(0, 0).red(), 120);

    // Scale-to-scale attention mass, one row per querying scale.
    const auto& rows = run.scaleAttention();
    QCOMPARE(rows.size(), size_t{3});
    QCOMPARE(rows[0], (std::vector<double>{1, 0, 0}));
    QCOMPARE(rows[1], (std::vector<double>{0.5, 0.5, 0}));
    QVERIFY(std::abs(rows[2][0] - 0.2) < 1e-6 && std::abs(rows[2][1] - 0.2) < 1e-6 &&
            std::abs(rows[2][2] - 0.6) < 1e-6);

    // Cached share per scale for one head, and the mean over heads/layers.
    const kvs::RetainedMasks& m = *run.lastUnit()->retained;
    QCOMPARE(retainedShareByScale(m, run.scaleLayout(), 0, 1, 3), (std::vector<double>{0, 0, 1}));
    QCOMPARE(retainedShareByScale(m, run.scaleLayout(), 0, 0, 3), (std::vector<double>{1, 1, 1}));
    QCOMPARE(retainedShareByScale(m, run.scaleLayout(), -1, -1, 3), (std::vector<double>{0.5, 0.5, 1}));
    QCOMPARE(retainedShareByScale(m, run.scaleLayout(), 0, 0, 2),
             (std::vector<double>{1, 1, -1}));  // scale 2 not generated yet
  }

  void scaleAttentionDensityCoversTheImage() {
    const ScaleLayout l{{1, 2}, {}};
    kvs::AttentionMap a;
    a.positions = 5;
    a.weights = {0.5f, 0.5f, 0, 0, 0};  // half on the 1x1 scale, half on the top-left 2x2 token
    const std::vector<double> d = attentionDensityOnGrid(a, l, 2, 2);
    QCOMPARE(d.size(), size_t{4});
    // 1x1 spreads 0.5 over 4 cells; the 2x2 token covers its one cell.
    QVERIFY(std::abs(d[0] - 0.625) < 1e-9);
    QVERIFY(std::abs(d[1] - 0.125) < 1e-9 && std::abs(d[2] - 0.125) < 1e-9 && std::abs(d[3] - 0.125) < 1e-9);
  }

  void rectangularScalesCountTheirOwnTokens() {
    // Infinity's 0.75 template: scales of 1x1, 2x2 and 3x4 tokens (h x w).
    const ScaleLayout l{{1, 2, 3}, {1, 2, 4}};
    QCOMPARE(l.tokens(2), int64_t{12});
    QCOMPARE(l.begin(2), int64_t{5});
    QCOMPARE(l.scaleOf(16), int64_t{2});
    QCOMPARE(l.scaleOf(17), int64_t{-1});
    kvs::AttentionMap a;
    a.positions = 17;
    a.weights.assign(17, 0.0f);
    a.weights[5 + 3] = 1.0f;  // the top-right token of the 3x4 scale
    const std::vector<double> d = attentionDensityOnGrid(a, l, 3, 4);
    QCOMPARE(d.size(), size_t{12});
    QVERIFY(std::abs(d[3] - 1.0) < 1e-9);
    QVERIFY(std::abs(d[0]) < 1e-12 && std::abs(d[4]) < 1e-12);
  }

  void maskedRunFollowsGenerationOrder() {
    kvs::ModelSummary mar;
    mar.family = "mar";
    mar.kv_heads = 2;
    mar.condition_tokens = 4;
    RunViewModel run;
    run.setModel(mar);
    run.track(nullptr, 2, kvs::GenerationRequest{});
    QCOMPARE(run.family().name, std::string("mar"));
    run.handleStarted(kvs::StartedEvent{"mar", "cpu", 1, 2, 2, 4, "step", 3, "mar", 0, {}, {}, {}});
    QCOMPARE(run.generationStep(), (std::vector<int32_t>{-1, -1, -1, -1}));
    QCOMPARE(run.unitProgressText(), QStringLiteral("step 1/3"));
    const std::vector<std::vector<int32_t>> predicted = {{3}, {0, 2}, {1}};
    const std::vector<std::vector<uint8_t>> recomputed = {{1, 1, 1, 1}, {1, 0, 1, 1}, {0, 1, 0, 0}};
    const std::vector<double> flops = {4e9, 2e9, 1e9};
    for (int64_t s = 0; s < 3; ++s) {
      auto e = std::make_shared<kvs::UnitDoneEvent>();
      e->unit_index = s;
      e->units_total = 3;
      e->predicted_positions = predicted[static_cast<size_t>(s)];
      e->recomputed = recomputed[static_cast<size_t>(s)];
      e->unconditional_computed = s == 0;
      e->flops = flops[static_cast<size_t>(s)];
      run.handleUnit(e);
      if (s == 1) QCOMPARE(run.knownTokens(), int64_t{3});
    }
    QCOMPARE(run.generationStep(), (std::vector<int32_t>{1, 2, 1, 0}));
    QCOMPARE(run.knownTokens(), int64_t{4});
    QCOMPARE(run.unitProgressText(), QStringLiteral("step 3/3"));
    const auto& mem = run.memory();
    QCOMPARE(mem.size(), size_t{3});
    QCOMPARE(mem[0].recomputed_tokens, int64_t{4});
    QCOMPARE(mem[1].recomputed_tokens, int64_t{3});
    QCOMPARE(mem[2].recomputed_tokens, int64_t{1});
    QCOMPARE(mem[2].flops, 1e9);
    QVERIFY(mem[0].unconditional_computed);
    QVERIFY(!mem[1].unconditional_computed);
    // No KV cache: nothing is counted as evicted.
    QCOMPARE(run.evictionsPerUnit(), (std::vector<int64_t>{0, 0, 0}));
  }

  void policiesFollowTheRegistryFamilies() {
    const kvs::FamilyDescription& var = familyDescription("var");
    const kvs::FamilyDescription& mar = familyDescription("mar");
    const kvs::FamilyDescription& llamagen = familyDescription("llamagen");
    QCOMPARE(policiesForFamily(var),
             (QStringList{QStringLiteral("full"), QStringLiteral("streaming"), QStringLiteral("amskv"),
                          QStringLiteral("scale_groups"), QStringLiteral("heatkv"), QStringLiteral("scalekv"),
                          QStringLiteral("hack"), QStringLiteral("h2o"), QStringLiteral("snapkv")}));
    QCOMPARE(policiesForFamily(mar), (QStringList{QStringLiteral("full"), QStringLiteral("lazymar")}));
    const QStringList raster = policiesForFamily(llamagen);
    QVERIFY(raster.contains(QStringLiteral("linear")) && raster.contains(QStringLiteral("headkv")));
    QVERIFY(!raster.contains(QStringLiteral("heatkv")) && !raster.contains(QStringLiteral("lazymar")));
    const QString problem = policyFamilyProblem(QStringLiteral("linear:rho=0.25"), var);
    QVERIFY(problem.contains(QStringLiteral("'linear'")) && problem.contains(QStringLiteral("heatkv")));
    QVERIFY(problem.contains(QStringLiteral("next-scale (VAR)")));  // the description's display name
    QVERIFY(!policyFamilyProblem(QStringLiteral("lazymar"), llamagen).isEmpty());
    QVERIFY(policyFamilyProblem(QStringLiteral("heatkv:budget=0.1"), var).isEmpty());
    QVERIFY(policyFamilyProblem(QStringLiteral("full"), mar).isEmpty());
    const auto* heatkv = firstUseCalibration(QStringLiteral("heatkv:budget=0.1"), var);
    QVERIFY(heatkv && heatkv->label == "HeatKV" && heatkv->file == "heatkv_calibration.json");
    // HeatKV's own calibration set: calibration_images=N (0 or absent: the default calibration).
    QCOMPARE(calibrationImages(QStringLiteral("heatkv:budget=0.1,calibration_images=5"), *heatkv), int64_t{5});
    QCOMPARE(calibrationImages(QStringLiteral("heatkv:budget=0.1"), *heatkv), int64_t{0});
    QCOMPARE(calibrationImages(QStringLiteral("heatkv:calibration_images=0"), *heatkv), int64_t{0});
    QVERIFY(heatkv->images_work && heatkv->images_work(1) == "S-CAS head scores on 1 class" &&
            heatkv->images_work(5) == "S-CAS head scores on 5 classes");
    const auto* scalekv = firstUseCalibration(QStringLiteral("scalekv:rho=1/4"), var);
    QVERIFY(scalekv && scalekv->label == "ScaleKV" && scalekv->file == "scalekv_calibration.json");
    QCOMPARE(calibrationImages(QStringLiteral("scalekv:rho=1/4,calibration_images=5"), *scalekv), int64_t{0});
    const auto* hack = firstUseCalibration(QStringLiteral("hack:rho=1/4"), var);
    QVERIFY(hack && hack->label == "HACK" && hack->file == "hack_calibration.json");
    QVERIFY(!firstUseCalibration(QStringLiteral("streaming"), var) &&
            !firstUseCalibration(QStringLiteral("amskv"), var) &&
            !firstUseCalibration(QStringLiteral("heatkv"), llamagen));
    // An unknown family offers no policies (and says so instead of guessing one).
    QVERIFY(!knownFamily("no-such-family") && policiesForFamily(familyDescription("no-such-family")).isEmpty());
    for (const kvs::FamilyDescription* f : {&llamagen, &var, &mar})
      for (const QString& spec : comparePresets(*f))
        if (!spec.isEmpty()) {
          QVERIFY2(policyFamilyProblem(spec, *f).isEmpty(), qPrintable(spec));
          QVERIFY2(kvs::policy_spec_problem(spec.toStdString()).empty(), qPrintable(spec));
        }
  }

  void compareChecksFamiliesAndColumns() {
    CompareViewModel compare(nullptr);
    QVERIFY(compare
                .start({QStringLiteral("full"), QStringLiteral("linear:rho=0.25")}, kvs::GenerationRequest{},
                       familyDescription("var"))
                .contains(QStringLiteral("linear")));
    QVERIFY(!compare.running());
    QVERIFY(compare
                .start({QStringLiteral("full"), QStringLiteral("heatkv:budget=0.1")}, kvs::GenerationRequest{},
                       familyDescription("mar"))
                .contains(QStringLiteral("heatkv")));

    auto result = [](double flops, std::vector<int32_t> order, uint8_t shade) {
      auto r = std::make_shared<kvs::GenerationResult>();
      r->images = {flatImage(8, shade)};
      r->tokens = {std::move(order)};
      r->flops = flops;
      r->tokens_per_second = 10;
      return ResultPtr(r);
    };
    const QVector<ResultPtr> results = {result(8e9, {0, 1, 2, 3}, 100), result(3e9, {0, 1, 2, 3}, 104)};
    const QStringList specs = {QStringLiteral("full"), QStringLiteral("lazymar")};
    const auto masked = CompareViewModel::computeRows(specs, results, familyDescription("mar"));
    QCOMPARE(masked.size(), 2);
    QVERIFY(std::isnan(masked[1].tokenAgreement));  // MAR's token lists are generation orders
    QCOMPARE(masked[1].flops, 3e9);
    QVERIFY(std::isfinite(masked[1].psnr) && masked[1].psnr > 20);
    const auto scale = CompareViewModel::computeRows(specs, results, familyDescription("var"));
    QCOMPARE(scale[1].tokenAgreement, 1.0);
  }
};

QTEST_MAIN(TestFamilyViewModels)
#include "test_family_view_models.moc"
