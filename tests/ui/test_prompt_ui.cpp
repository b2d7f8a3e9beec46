// What a person uses a text model with, offscreen and without a model: the
// parameter panel's prompt box in place of the class picker (decided by the
// family description, so a description built here stands in for a text family),
// Ctrl+Enter, the negative prompt, the image count and precision reaching the
// request, the prompt history surviving a settings round trip, a PNG's prompt
// recalled into the panel, and the prompt strip shading each token by the
// attention the latest image token gives it.
#include <QComboBox>
#include <QGroupBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/models/family_registry.h"
#include "engine/session/generation_metadata.h"
#include "tests/ui/window_test_support.h"
#include "ui/render/overlay_images.h"
#include "ui/viewmodel/generation_settings.h"
#include "ui/viewmodel/history_model.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/error_banner.h"
#include "ui/widgets/main_window.h"
#include "ui/widgets/parameter_panel.h"
#include "ui/widgets/prompt_attention_strip.h"

using namespace kvs::ui;

namespace {

// A text family as the window would see it: the raster family's facts with
// text conditioning (no registry entry needed).
kvs::FamilyDescription textFamily() {
  kvs::FamilyDescription d = *kvs::find_family_description("llamagen");
  d.name = "text-test";
  d.display_name = "text-to-image (test)";
  d.conditioning = kvs::Conditioning::Text;
  return d;
}

kvs::ModelSummary textModel() {
  kvs::ModelSummary m;
  m.dir = "/models/text-test";
  m.name = "text-test";
  m.family = "text-test";
  m.grid = 4;
  m.n_layer = 2;
  m.kv_heads = 2;
  return m;
}

kvs::ModelSummary classModel() {
  kvs::ModelSummary m;
  m.dir = "/models/class-test";
  m.name = "class-test";
  m.family = "llamagen";
  m.grid = 4;
  m.num_classes = 3;
  m.class_names = {"sky", "sea", "hill"};
  return m;
}

// The chat template around "a reddish fox": tags, a template newline, and a
// word split in two pieces ("red" + "dish").
std::vector<std::string> foxLabels() {
  return {"<|User|>", ":", " a", " red", "dish", " fox", "\n\n", "<|Assistant|>"};
}

kvs::StartedEvent textStarted() {
  kvs::StartedEvent e;
  e.model_name = "text-test";
  e.family = "text-test";
  e.grid_height = e.grid_width = 4;
  e.tokens_total = 16;
  e.units_total = 4;
  e.condition_tokens = 8;
  e.condition_labels = foxLabels();
  return e;
}

UnitDonePtr unitWithAttention(int64_t unit, std::vector<float> condition) {
  auto e = std::make_shared<kvs::UnitDoneEvent>();
  e->unit_index = unit;
  e->units_total = 4;
  e->policy = "full";
  kvs::AttentionMap map;
  map.positions = static_cast<int64_t>(condition.size()) + 4 * (unit + 1);
  map.query_position = map.positions - 1;
  map.weights = std::move(condition);
  map.weights.resize(static_cast<size_t>(map.positions), 0.01f);
  e->attention = map;
  return e;
}

QPlainTextEdit* promptEdit(ParameterPanel& panel) {
  return panel.findChild<QPlainTextEdit*>(QStringLiteral("promptEdit"));
}

}  // namespace

class TestPromptUi : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void panelShowsThePromptBoxForTextModelsAndClassesOtherwise() {
    ParameterPanel panel;
    panel.setModel(classModel(), *kvs::find_family_description("llamagen"));
    panel.show();
    auto* classes = panel.findChild<QComboBox*>(QStringLiteral("classCombo"));
    QVERIFY(classes && promptEdit(panel));
    QVERIFY(classes->isVisible());
    QVERIFY(!promptEdit(panel)->isVisible());
    QVERIFY(!panel.takesPrompt());
    QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("dtypeCombo"))->isVisible());  // every family

    panel.setModel(textModel(), textFamily());
    QVERIFY(panel.takesPrompt());
    QVERIFY(!classes->isVisible());
    QVERIFY(promptEdit(panel)->isVisible());
    QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("promptHistory"))->isVisible());
    QVERIFY(panel.findChild<QGroupBox*>(QStringLiteral("negativePromptBox"))->isVisible());
    QVERIFY(panel.findChild<QComboBox*>(QStringLiteral("dtypeCombo"))->isVisible());
    // The batch row says what it is for a prompt.
    bool imagesLabel = false;
    for (QLabel* l : panel.findChildren<QLabel*>())
      if (l->text() == QStringLiteral("Images") && l->isVisible()) imagesLabel = true;
    QVERIFY(imagesLabel);

    // Back to a class model: the picker returns.
    panel.setModel(classModel(), *kvs::find_family_description("llamagen"));
    QVERIFY(classes->isVisible());
    QVERIFY(!promptEdit(panel)->isVisible());
  }

  void aTextModelsSuggestedPromptFillsAnEmptyBoxOnly() {
    ParameterPanel panel;
    kvs::ModelSummary model = textModel();
    model.example_prompts = {"a lake at night with a full moon", "a desert at dawn"};
    panel.setModel(model, textFamily());
    QCOMPARE(promptEdit(panel)->toPlainText(), QStringLiteral("a lake at night with a full moon"));
    // What the user typed is never replaced by a suggestion.
    promptEdit(panel)->setPlainText(QStringLiteral("a red fox"));
    model.example_prompts = {"a desert at dawn"};
    panel.setModel(model, textFamily());
    QCOMPARE(promptEdit(panel)->toPlainText(), QStringLiteral("a red fox"));
    // A model without suggestions leaves an empty box empty.
    ParameterPanel plain;
    plain.setModel(textModel(), textFamily());
    QVERIFY(promptEdit(plain)->toPlainText().isEmpty());
  }

  void ctrlEnterInThePromptGenerates() {
    ParameterPanel panel;
    panel.setModel(textModel(), textFamily());
    panel.show();
    QSignalSpy generate(&panel, &ParameterPanel::generateRequested);
    QPlainTextEdit* edit = promptEdit(panel);
    edit->setFocus();
    QTest::keyClicks(edit, QStringLiteral("a fox"));
    QTest::keyClick(edit, Qt::Key_Return);  // a plain Return is a new line
    QTest::keyClicks(edit, QStringLiteral("in snow"));
    QCOMPARE(generate.count(), 0);
    QCOMPARE(edit->toPlainText(), QStringLiteral("a fox\nin snow"));
    QTest::keyClick(edit, Qt::Key_Return, Qt::ControlModifier);
    QCOMPARE(generate.count(), 1);
    QTest::keyClick(edit, Qt::Key_Enter, Qt::ControlModifier | Qt::KeypadModifier);
    QCOMPARE(generate.count(), 2);
    QCOMPARE(edit->toPlainText(), QStringLiteral("a fox\nin snow"));  // no line added
    // Not while a run is going (the button is off then too).
    panel.setRunning(true);
    QTest::keyClick(edit, Qt::Key_Return, Qt::ControlModifier);
    QCOMPARE(generate.count(), 2);
  }

  void panelFillsATextRequest() {
    ParameterPanel panel;
    panel.setModel(textModel(), textFamily());
    promptEdit(panel)->setPlainText(QStringLiteral("a red fox,\nwinter light"));
    panel.findChild<QSpinBox*>(QStringLiteral("batchSpin"))->setValue(3);
    panel.findChild<QComboBox*>(QStringLiteral("dtypeCombo"))->setCurrentText(QStringLiteral("bf16"));
    auto* negativeBox = panel.findChild<QGroupBox*>(QStringLiteral("negativePromptBox"));
    panel.findChild<QPlainTextEdit*>(QStringLiteral("negativePromptEdit"))->setPlainText(QStringLiteral("blurry"));
    QVERIFY(!negativeBox->isChecked());  // off by default: the model's own unconditional row
    QVERIFY(negativeBox->toolTip().contains(QStringLiteral("pad tokens")));

    kvs::GenerationRequest r = panel.settings().toRequest();
    QCOMPARE(r.prompt, std::string("a red fox,\nwinter light"));
    QCOMPARE(r.negative_prompt, std::string());
    QCOMPARE(r.images, int64_t{3});
    QVERIFY(r.class_ids.empty());
    QCOMPARE(r.dtype, std::string("bf16"));
    QCOMPARE(r.batch(), int64_t{3});
    r.validate();

    negativeBox->setChecked(true);
    r = panel.settings().toRequest();
    QCOMPARE(r.negative_prompt, std::string("blurry"));

    // A class model ignores the prompt box: class ids, no prompt.
    panel.setModel(classModel(), *kvs::find_family_description("llamagen"));
    r = panel.settings().toRequest();
    QVERIFY(!r.is_text());
    QCOMPARE(r.class_ids.size(), size_t{3});
    QCOMPARE(r.dtype, std::string("bf16"));
  }

  void promptHistoryPersistsAcrossASettingsRoundTrip() {
    GenerationSettings s;
    for (int i = 0; i < kMaxPromptHistory + 5; ++i) s.rememberPrompt(QStringLiteral("prompt %1").arg(i));
    QCOMPARE(s.promptHistory.size(), kMaxPromptHistory);
    QCOMPARE(s.promptHistory.front(), QStringLiteral("prompt %1").arg(kMaxPromptHistory + 4));
    s.rememberPrompt(QStringLiteral("  prompt 20 \n"));  // again: moves to the front, once
    QCOMPARE(s.promptHistory.front(), QStringLiteral("prompt 20"));
    QCOMPARE(s.promptHistory.count(QStringLiteral("prompt 20")), 1);
    s.rememberPrompt(QStringLiteral("   "));
    QCOMPARE(s.promptHistory.front(), QStringLiteral("prompt 20"));

    ParameterPanel panel;
    panel.setModel(textModel(), textFamily());
    panel.rememberPrompt(QStringLiteral("a red fox"));
    panel.rememberPrompt(QStringLiteral("two cats,\non a sofa"));
    promptEdit(panel)->setPlainText(QStringLiteral("typing"));
    panel.findChild<QGroupBox*>(QStringLiteral("negativePromptBox"))->setChecked(true);
    panel.findChild<QPlainTextEdit*>(QStringLiteral("negativePromptEdit"))->setPlainText(QStringLiteral("blur"));
    panel.findChild<QComboBox*>(QStringLiteral("dtypeCombo"))->setCurrentText(QStringLiteral("f16"));

    QTemporaryDir dir;
    {
      QSettings q(dir.filePath(QStringLiteral("s.ini")), QSettings::IniFormat);
      panel.settings().save(q);
    }
    QSettings q(dir.filePath(QStringLiteral("s.ini")), QSettings::IniFormat);
    ParameterPanel again;
    again.setModel(textModel(), textFamily());
    again.setSettings(GenerationSettings::load(q, again.settings()));
    QCOMPARE(again.promptHistory(), (QStringList{QStringLiteral("two cats,\non a sofa"), QStringLiteral("a red fox")}));
    QCOMPARE(promptEdit(again)->toPlainText(), QStringLiteral("typing"));
    const GenerationSettings back = again.settings();
    QVERIFY(back.negativePromptEnabled);
    QCOMPARE(back.negativePrompt, QStringLiteral("blur"));
    QCOMPARE(back.dtype, QStringLiteral("f16"));
    // The dropdown lists them newest first and puts a pick back in the box.
    auto* recent = again.findChild<QComboBox*>(QStringLiteral("promptHistory"));
    QCOMPARE(recent->count(), 3);  // the caption, then the prompts
    QCOMPARE(recent->itemData(1).toString(), QStringLiteral("two cats,\non a sofa"));
    Q_EMIT recent->activated(2);
    QCOMPARE(promptEdit(again)->toPlainText(), QStringLiteral("a red fox"));
    QCOMPARE(recent->currentIndex(), 0);
    // Ctrl+Up / Ctrl+Down step through them from the box and back to the draft.
    QPlainTextEdit* edit = promptEdit(again);
    edit->setPlainText(QStringLiteral("draft"));
    QTest::keyClick(edit, Qt::Key_Up, Qt::ControlModifier);
    QCOMPARE(edit->toPlainText(), QStringLiteral("two cats,\non a sofa"));
    QTest::keyClick(edit, Qt::Key_Up, Qt::ControlModifier);
    QCOMPARE(edit->toPlainText(), QStringLiteral("a red fox"));
    QTest::keyClick(edit, Qt::Key_Up, Qt::ControlModifier);  // the oldest stays
    QCOMPARE(edit->toPlainText(), QStringLiteral("a red fox"));
    QTest::keyClick(edit, Qt::Key_Down, Qt::ControlModifier);
    QTest::keyClick(edit, Qt::Key_Down, Qt::ControlModifier);
    QCOMPARE(edit->toPlainText(), QStringLiteral("draft"));
  }

  void aSavedTextImageRecallsItsPromptIntoThePanel() {
    kvs::GenerationRequest request;
    request.model_path = "/models/text-test";
    request.prompt = "a red fox,\nwinter light";
    request.negative_prompt = "blurry";
    request.images = 2;
    request.seed = 9;
    request.dtype = "bf16";
    auto result = std::make_shared<kvs::GenerationResult>();
    kvs::RgbImage img;
    img.width = img.height = 8;
    img.pixels.assign(8 * 8 * 3, 120);
    result->images = {img, img};
    result->tokens = {std::vector<int32_t>(16, 1), std::vector<int32_t>(16, 2)};
    result->model_name = "text-test";
    result->policy = "full";
    HistoryModel history;
    history.addResult(request, result, {});
    QCOMPARE(history.entry(0).className, QStringLiteral("a red fox, winter light"));
    QCOMPARE(history.entry(0).classId(), int64_t{-1});
    QCOMPARE(history.entry(0).singleImageRequest().images, int64_t{1});
    QVERIFY(history.data(history.index(0), Qt::ToolTipRole).toString().contains(QStringLiteral("blurry")));

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fox.png"));
    history.savePng(1, path, QStringLiteral("test"));
    const kvs::RecalledImage back = kvs::read_generation_png(path.toStdString());
    history.addRecalled(RunViewModel::toQImage(back.image), back.request, QString(), path);
    QCOMPARE(history.entry(0).className, QStringLiteral("a red fox, winter light"));

    ParameterPanel panel;
    panel.setModel(textModel(), textFamily());
    panel.rememberPrompt(QStringLiteral("older prompt"));
    GenerationSettings s = GenerationSettings::fromRequest(history.entry(0).singleImageRequest());
    s.promptHistory = panel.promptHistory();  // what MainWindow::recall keeps
    panel.setSettings(s);
    QCOMPARE(promptEdit(panel)->toPlainText(), QStringLiteral("a red fox,\nwinter light"));
    QVERIFY(panel.findChild<QGroupBox*>(QStringLiteral("negativePromptBox"))->isChecked());
    QCOMPARE(panel.findChild<QPlainTextEdit*>(QStringLiteral("negativePromptEdit"))->toPlainText(),
             QStringLiteral("blurry"));
    QCOMPARE(panel.settings().seed, quint64{9});
    QCOMPARE(panel.settings().dtype, QStringLiteral("bf16"));
    QCOMPARE(panel.promptHistory(), QStringList{QStringLiteral("older prompt")});
  }

  void tokensReadAsWordsWithTagsDimmed() {
    const QVector<PromptTokenCell> cells = promptTokenCells(foxLabels());
    QCOMPARE(cells.size(), 8);
    QVERIFY(cells[0].tag);
    QCOMPARE(cells[0].text, QStringLiteral("<|User|>"));
    QVERIFY(!cells[1].tag);  // ":" after a tag starts a word of its own
    QVERIFY(cells[1].startsWord);
    QCOMPARE(cells[3].text, QStringLiteral("red"));
    QVERIFY(cells[3].startsWord);
    QCOMPARE(cells[4].text, QStringLiteral("dish"));
    QVERIFY(!cells[4].startsWord);  // "reddish": one word of two pieces
    QCOMPARE(cells[5].text, QStringLiteral("fox"));
    QVERIFY(cells[6].tag);  // the template's blank line
    QCOMPARE(cells[6].text, QString(2, QChar(0x21B5)));
    QVERIFY(cells[7].tag);
    // Byte-level and SentencePiece word markers read the same.
    const QVector<PromptTokenCell> marked = promptTokenCells({"\u0120cat", "\u2581dog", "s"});
    QCOMPARE(marked[0].text, QStringLiteral("cat"));
    QCOMPARE(marked[1].text, QStringLiteral("dog"));
    QVERIFY(marked[1].startsWord && !marked[2].startsWord);
  }

  void stripShowsACrossAttentionsSharesOfTheText() {
    // A next-scale text family (Infinity): no condition positions in the cache;
    // each scale's cross-attention weighs the labelled T5 pieces directly.
    RunViewModel run;
    PromptAttentionStrip strip;
    strip.setRun(&run);
    strip.resize(420, 80);
    kvs::StartedEvent started;
    started.model_name = "infinity-test";
    started.family = "infinity";
    started.grid_height = started.grid_width = 4;
    started.tokens_total = 21;
    started.units_total = 3;
    started.unit_name = "scale";
    started.condition_labels = {"\u2581a", "\u2581red", "\u2581fox", "</s>"};
    started.unit_heights = started.unit_widths = {1, 2, 4};
    run.handleStarted(started);
    QVERIFY(strip.isVisible());
    QCOMPARE(strip.cellCount(), 4);
    auto unit = std::make_shared<kvs::UnitDoneEvent>();
    unit->units_total = 3;
    unit->policy = "full";
    unit->condition_attention = {0.1f, 0.2f, 0.6f, 0.1f};
    run.handleUnit(unit);
    const std::vector<double>& shares = run.promptAttention();
    QCOMPARE(shares.size(), size_t{4});
    QVERIFY(std::abs(shares[2] - 0.6) < 1e-6);
    QCOMPARE(strip.cellShade(2), 1.0);  // "fox"
    QVERIFY(strip.cellShade(1) > strip.cellShade(0));
    QVERIFY(strip.cellShade(1) < strip.cellShade(2));
  }

  void stripShadesTheMostAttendedTokenStrongest() {
    RunViewModel run;
    PromptAttentionStrip strip;
    strip.setRun(&run);
    strip.resize(420, 80);
    QVERIFY(!strip.isVisible());  // nothing started
    run.handleStarted(textStarted());
    QVERIFY(strip.isVisible());
    QCOMPARE(strip.cellCount(), 8);
    QVERIFY(run.promptAttention().empty());

    // " fox" (position 5) gets the most attention of the prompt's tokens.
    run.handleUnit(unitWithAttention(0, {0.04f, 0.01f, 0.02f, 0.05f, 0.02f, 0.20f, 0.01f, 0.01f}));
    const std::vector<double>& shares = run.promptAttention();
    QCOMPARE(shares.size(), size_t{8});
    double sum = 0;
    for (double v : shares) sum += v;
    QVERIFY(std::abs(sum - 1.0) < 1e-9);  // normalised over the condition positions
    QVERIFY(std::abs(shares[5] - 0.20 / 0.36) < 1e-6);
    QCOMPARE(strip.cellShade(5), 1.0);
    for (int i = 0; i < strip.cellCount(); ++i)
      if (i != 5) QVERIFY2(strip.cellShade(i) < strip.cellShade(5), qPrintable(QString::number(i)));
    QVERIFY(strip.cellShade(3) > strip.cellShade(2));  // 0.05 over 0.02
    // Drawn in the heatmap's colormap: the strongest cell has the colormap's top colour.
    const QImage shot = strip.grab().toImage();
    const QRect fox = strip.cellRect(5);
    QVERIFY(fox.isValid());
    QCOMPARE(QColor(shot.pixel(fox.left() + 1, fox.top() + 1)), strip.cellColor(5));
    QCOMPARE(strip.cellColor(5), QColor(colormapBar(256, 1).pixel(255, 0)));
    const QColor weak = QColor(shot.pixel(strip.cellRect(2).left() + 1, strip.cellRect(2).top() + 1));
    QVERIFY(qGray(weak.rgb()) < qGray(strip.cellColor(5).rgb()));

    // The next line's map moves the shading: now "red".
    run.handleUnit(unitWithAttention(1, {0.04f, 0.01f, 0.02f, 0.30f, 0.02f, 0.10f, 0.01f, 0.01f}));
    QCOMPARE(strip.cellShade(3), 1.0);
    QVERIFY(strip.cellShade(5) < 1.0);
    // A unit without an attention map keeps the last shading.
    auto bare = std::make_shared<kvs::UnitDoneEvent>();
    bare->unit_index = 2;
    run.handleUnit(bare);
    QCOMPARE(strip.cellShade(3), 1.0);

    // The attention overlay switched off hides the strip.
    strip.setOverlayEnabled(false);
    QVERIFY(!strip.isVisible());
  }

  // With KVSTUDIO_TEST_SCREENSHOTS naming a folder: the text panel and the strip
  // as PNGs, on the window's dark colours (for the documentation; skipped otherwise).
  void screenshotsWhenAsked() {
    const QString folder = qEnvironmentVariable("KVSTUDIO_TEST_SCREENSHOTS");
    if (folder.isEmpty()) QSKIP("KVSTUDIO_TEST_SCREENSHOTS is not set");
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(30, 33, 40));
    dark.setColor(QPalette::WindowText, QColor(201, 209, 217));
    dark.setColor(QPalette::Base, QColor(22, 25, 31));
    dark.setColor(QPalette::Text, QColor(230, 237, 243));
    dark.setColor(QPalette::Button, QColor(45, 49, 58));
    dark.setColor(QPalette::ButtonText, QColor(201, 209, 217));
    ParameterPanel panel;
    panel.setPalette(dark);
    panel.setAutoFillBackground(true);
    panel.setModel(textModel(), textFamily());
    panel.rememberPrompt(QStringLiteral("a lighthouse at dusk"));
    promptEdit(panel)->setPlainText(QStringLiteral("a reddish fox in the snow,\nwinter light, film grain"));
    panel.findChild<QGroupBox*>(QStringLiteral("negativePromptBox"))->setChecked(true);
    panel.findChild<QPlainTextEdit*>(QStringLiteral("negativePromptEdit"))->setPlainText(QStringLiteral("blurry"));
    panel.resize(360, 760);
    panel.show();
    QTest::qWait(100);  // the layout settles
    QVERIFY(panel.grab().save(folder + QStringLiteral("/prompt_panel.png")));

    RunViewModel run;
    PromptAttentionStrip strip;
    strip.setPalette(dark);
    strip.setAutoFillBackground(true);
    strip.setRun(&run);
    kvs::StartedEvent e = textStarted();
    e.condition_labels = {"<｜begin▁of▁sentence｜>",
                          "<|User|>",
                          ":",
                          " a",
                          " red",
                          "dish",
                          " fox",
                          " in",
                          " the",
                          " snow",
                          ",",
                          "\n",
                          "winter",
                          " light",
                          ",",
                          " film",
                          " grain",
                          "\n\n",
                          "<|Assistant|>",
                          ":",
                          "<begin_of_image>"};
    e.condition_tokens = static_cast<int64_t>(e.condition_labels.size());
    run.handleStarted(e);
    std::vector<float> w = {0.5f,  0.02f, 0.01f, 0.01f, 0.06f, 0.05f, 0.12f, 0.01f, 0.01f, 0.08f, 0.01f,
                            0.01f, 0.03f, 0.04f, 0.01f, 0.01f, 0.02f, 0.01f, 0.02f, 0.01f, 0.03f};
    run.handleUnit(unitWithAttention(0, w));
    strip.resize(640, strip.heightForWidth(640));
    strip.show();
    QVERIFY(strip.grab().save(folder + QStringLiteral("/prompt_strip.png")));
  }

  // In the window: typing a prompt does not trip the single-key overlay
  // shortcuts (A, K, G, L), and Ctrl+Enter in the box starts exactly one run.
  // The demo is a class model, so the engine refuses the prompt with the
  // session's message: what a person sees when the box and model disagree.
  void windowPromptTypingAndCtrlEnter() {
    MainWindow w(test::windowOptions());
    w.show();
    w.parameters()->setModel(w.model(), textFamily());
    const unsigned overlays = w.canvas()->overlays();
    QPlainTextEdit* edit = promptEdit(*w.parameters());
    QVERIFY(edit->isVisible());
    edit->setFocus();
    QTest::keyClicks(edit, QStringLiteral("a kite"));
    QCOMPARE(edit->toPlainText(), QStringLiteral("a kite"));
    QCOMPARE(w.canvas()->overlays(), overlays);
    QSignalSpy done(&w, &MainWindow::runFinished);
    QTest::keyClick(edit, Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(done.wait(30000));
    QTest::qWait(200);
    QCOMPARE(done.count(), 1);
    QVERIFY(!done[0][0].toBool());
    QVERIFY2(w.banner()->message().contains(QStringLiteral("class-conditional")), qPrintable(w.banner()->message()));
    QCOMPARE(w.parameters()->promptHistory(), QStringList{QStringLiteral("a kite")});
  }

  void stripIsHiddenForClassModels() {
    RunViewModel run;
    PromptAttentionStrip strip;
    strip.setRun(&run);
    kvs::StartedEvent e;
    e.family = "llamagen";
    e.grid_height = e.grid_width = 4;
    e.condition_tokens = 1;
    run.handleStarted(e);
    run.handleUnit(unitWithAttention(0, {0.5f}));
    QVERIFY(!strip.isVisible());
    QCOMPARE(strip.cellCount(), 0);
    QVERIFY(run.promptAttention().empty());
  }
};

QTEST_MAIN(TestPromptUi)
#include "test_prompt_ui.moc"
