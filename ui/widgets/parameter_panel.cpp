#include "ui/widgets/parameter_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRandomGenerator>
#include <QRegularExpressionValidator>
#include <QSlider>
#include <QSpinBox>
#include <QTextCursor>
#include <QToolButton>
#include <QVBoxLayout>

#include <cmath>

#include "engine/cache/policies/policy_budget.h"
#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/device_menu.h"
#include "ui/widgets/policy_form.h"

namespace kvs::ui {
namespace {

enum BudgetMode { kRho = 0, kTokens = 1 };

using BudgetKind = kvs::PolicyBudgetKind;

QString classLabel(int64_t id, const std::vector<std::string>& names) {
  if (id < static_cast<int64_t>(names.size()))
    return QStringLiteral("%1  ·  %2").arg(QString::fromStdString(names[static_cast<size_t>(id)])).arg(id);
  return QStringLiteral("class %1").arg(id);
}

}  // namespace

ParameterPanel::ParameterPanel(QWidget* parent) : QWidget(parent), family_(familyDescription(std::string())) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  layout->setSpacing(8);

  // Model.
  auto* modelRow = new QHBoxLayout;
  model_label_ = new QLabel(this);
  model_label_->setWordWrap(true);
  auto* models = new QPushButton(tr("Models…"), this);
  models->setToolTip(tr("Model manager: bundles found, architecture, KV bytes per token, import a checkpoint"));
  connect(models, &QPushButton::clicked, this, &ParameterPanel::modelsRequested);
  modelRow->addWidget(model_label_, 1);
  modelRow->addWidget(models);
  layout->addLayout(modelRow);

  // What to generate.
  auto* what = new QGroupBox(tr("Image"), this);
  auto* form = new QFormLayout(what);
  image_form_ = form;
  class_combo_ = new QComboBox(what);
  class_combo_->setEditable(true);
  class_combo_->setInsertPolicy(QComboBox::NoInsert);
  class_combo_->completer()->setFilterMode(Qt::MatchContains);
  class_combo_->completer()->setCompletionMode(QCompleter::PopupCompletion);
  class_combo_->lineEdit()->setPlaceholderText(tr("search classes…"));
  class_combo_->setToolTip(tr("The class to generate: type part of its name to search"));
  class_combo_->setObjectName(QStringLiteral("classCombo"));
  form->addRow(tr("Class"), class_combo_);

  // Text models: the prompt box replaces the class picker (applyConditioning).
  prompt_box_ = new QWidget(what);
  auto* pb = new QVBoxLayout(prompt_box_);
  pb->setContentsMargins(0, 0, 0, 0);
  pb->setSpacing(4);
  prompt_edit_ = new QPlainTextEdit(prompt_box_);
  prompt_edit_->setObjectName(QStringLiteral("promptEdit"));
  prompt_edit_->setPlaceholderText(tr("Describe the image…"));
  prompt_edit_->setToolTip(tr("What to draw; several lines are fine. Ctrl+Enter generates"));
  prompt_edit_->setTabChangesFocus(true);
  prompt_edit_->setFixedHeight(prompt_edit_->fontMetrics().lineSpacing() * 5 + 12);
  prompt_edit_->installEventFilter(this);
  pb->addWidget(prompt_edit_);
  prompt_history_combo_ = new QComboBox(prompt_box_);
  prompt_history_combo_->setObjectName(QStringLiteral("promptHistory"));
  prompt_history_combo_->setToolTip(tr("Recent prompts: pick one to put it back in the box"));
  prompt_history_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  prompt_history_combo_->setMinimumContentsLength(12);
  connect(prompt_history_combo_, &QComboBox::activated, this, [this](int index) {
    const QString text = prompt_history_combo_->itemData(index).toString();
    if (!text.isEmpty()) prompt_edit_->setPlainText(text);
    const QSignalBlocker block(prompt_history_combo_);
    prompt_history_combo_->setCurrentIndex(0);
  });
  pb->addWidget(prompt_history_combo_);
  negative_box_ = new QGroupBox(tr("Negative prompt"), prompt_box_);
  negative_box_->setObjectName(QStringLiteral("negativePromptBox"));
  negative_box_->setCheckable(true);
  negative_box_->setChecked(false);
  negative_box_->setToolTip(
      tr("Off: the model's own unconditional row, as the official code runs it (the prompt with its text replaced by "
         "pad tokens). On: this text conditions the unconditional CFG row instead, steering away from it"));
  auto* nb = new QVBoxLayout(negative_box_);
  nb->setContentsMargins(4, 4, 4, 4);
  negative_edit_ = new QPlainTextEdit(negative_box_);
  negative_edit_->setObjectName(QStringLiteral("negativePromptEdit"));
  negative_edit_->setPlaceholderText(tr("What to steer away from…"));
  negative_edit_->setTabChangesFocus(true);
  negative_edit_->setFixedHeight(negative_edit_->fontMetrics().lineSpacing() * 3 + 12);
  negative_edit_->installEventFilter(this);
  nb->addWidget(negative_edit_);
  // A collapsed box while off: only its title and check box take room.
  connect(negative_box_, &QGroupBox::toggled, negative_edit_, &QWidget::setVisible);
  negative_edit_->setVisible(false);
  pb->addWidget(negative_box_);
  form->addRow(tr("Prompt"), prompt_box_);
  size_combo_ = new QComboBox(what);
  size_combo_->setObjectName(QStringLiteral("sizeCombo"));
  size_combo_->setToolTip(
      tr("The image size the prompt asks for (width x height in pixels): the model's own first, then the "
         "other shapes it was trained on. Larger sizes take more rows, and every row more tokens"));
  form->addRow(tr("Size"), size_combo_);

  // Finishing a picture (raster models whose bundle ships the VQ encoder).
  finish_box_ = new QGroupBox(tr("Finish a picture"), what);
  finish_box_->setObjectName(QStringLiteral("finishBox"));
  finish_box_->setCheckable(true);
  finish_box_->setChecked(false);
  finish_box_->setToolTip(
      tr("Keep a picture's top rows and let the model draw the rest: the picture is scaled to cover the image, "
         "its middle kept, and its top rows encoded into tokens the model is given (and caches like any other)"));
  auto* fb = new QFormLayout(finish_box_);
  fb->setContentsMargins(4, 4, 4, 4);
  auto* pathRow = new QHBoxLayout;
  finish_path_ = new QLineEdit(finish_box_);
  finish_path_->setObjectName(QStringLiteral("finishPath"));
  finish_path_->setPlaceholderText(tr("a PNG picture…"));
  auto* open = new QToolButton(finish_box_);
  open->setText(tr("Open…"));
  open->setToolTip(tr("Pick the PNG whose top rows to keep"));
  connect(open, &QToolButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Picture to finish"), finish_path_->text(),
                                                      tr("PNG pictures (*.png)"));
    if (!path.isEmpty()) finish_path_->setText(path);
  });
  pathRow->addWidget(finish_path_, 1);
  pathRow->addWidget(open);
  fb->addRow(tr("Picture"), pathRow);
  keep_rows_ = new QSpinBox(finish_box_);
  keep_rows_->setObjectName(QStringLiteral("keepRows"));
  keep_rows_->setToolTip(tr("Token rows taken from the picture; the model draws every row below them"));
  fb->addRow(tr("Rows kept"), keep_rows_);
  // A collapsed box while off: only its title and check box take room.
  auto showFinishing = [this, fb](bool on) {
    for (int row = 0; row < fb->rowCount(); ++row) fb->setRowVisible(row, on);
  };
  connect(finish_box_, &QGroupBox::toggled, this, showFinishing);
  showFinishing(false);
  form->addRow(finish_box_);

  auto* seedRow = new QHBoxLayout;
  seed_edit_ = new QLineEdit(QStringLiteral("0"), what);
  seed_edit_->setMinimumWidth(60);
  seed_edit_->setValidator(
      new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,19}")), seed_edit_));
  seed_edit_->setToolTip(tr("The same seed and parameters give the same image"));
  auto* dice = new QToolButton(what);
  dice->setText(tr("New"));
  dice->setToolTip(tr("New random seed"));
  connect(dice, &QToolButton::clicked, this, &ParameterPanel::rollSeed);
  auto* reuse = new QToolButton(what);
  reuse->setText(tr("Reuse"));
  reuse->setToolTip(tr("Reuse the seed of the last generation"));
  connect(reuse, &QToolButton::clicked, this, [this] { seed_edit_->setText(QString::number(last_seed_)); });
  seed_random_each_ = new QCheckBox(tr("new random seed every time"), what);
  seed_random_each_->setToolTip(tr("Draw a new random seed for every generation"));
  seedRow->addWidget(seed_edit_, 1);
  seedRow->addWidget(dice);
  seedRow->addWidget(reuse);
  form->addRow(tr("Seed"), seedRow);
  form->addRow(QString(), seed_random_each_);

  cfg_ = new QDoubleSpinBox(what);
  cfg_->setRange(0, 30);
  cfg_->setSingleStep(0.5);
  cfg_->setDecimals(2);
  cfg_->setToolTip(tr(
      "Classifier-free guidance scale; above 1 runs a conditional and an unconditional row (doubling the KV cache)"));
  form->addRow(tr("CFG"), cfg_);
  temperature_ = new QDoubleSpinBox(what);
  temperature_->setRange(0, 5);
  temperature_->setSingleStep(0.05);
  temperature_->setDecimals(2);
  temperature_->setToolTip(tr("Sampling temperature: lower is more conservative"));
  form->addRow(tr("Temperature"), temperature_);
  auto* topRow = new QHBoxLayout;
  top_k_ = new QSpinBox(what);
  top_k_->setRange(0, 1 << 20);
  top_k_->setSpecialValueText(tr("off"));
  top_k_->setToolTip(tr("Sample among the k most likely tokens (0: off)"));
  top_p_ = new QDoubleSpinBox(what);
  top_p_->setRange(0.01, 1.0);
  top_p_->setSingleStep(0.01);
  top_p_->setToolTip(tr("Sample among the most likely tokens holding this probability mass (1: off)"));
  topRow->addWidget(new QLabel(tr("k"), what));
  topRow->addWidget(top_k_, 1);
  topRow->addWidget(new QLabel(tr("p"), what));
  topRow->addWidget(top_p_, 1);
  form->addRow(tr("Top"), topRow);
  auto* batchRow = new QHBoxLayout;
  batch_ = new QSpinBox(what);
  batch_->setRange(1, 16);
  batch_->setToolTip(tr("Images generated together (the canvas follows the first; all go to the history)"));
  // Automatic, the CPU and every GPU by name (engine/core/device_menu.h); the
  // item data is the device name a request takes ("auto", "cpu", "cuda:N").
  device_ = new QComboBox(what);
  device_->setObjectName(QStringLiteral("deviceCombo"));
  for (const kvs::DeviceMenuEntry& entry : kvs::device_menu_entries(kvs::cuda_devices())) {
    device_->addItem(QString::fromStdString(entry.label), QString::fromStdString(entry.value));
    device_->setItemData(device_->count() - 1, QString::fromStdString(entry.tooltip), Qt::ToolTipRole);
  }
  device_->setToolTip(tr("Automatic: the first GPU when one is available, else the CPU; or a GPU by name"));
  batchRow->addWidget(batch_, 1);
  batchRow->addWidget(new QLabel(tr("Device"), what));
  batchRow->addWidget(device_, 1);
  batch_label_ = new QLabel(tr("Batch"), what);
  batch_->setObjectName(QStringLiteral("batchSpin"));
  form->addRow(batch_label_, batchRow);
  dtype_ = new QComboBox(what);
  dtype_->setObjectName(QStringLiteral("dtypeCombo"));
  dtype_->addItems({QStringLiteral("auto"), QStringLiteral("f32"), QStringLiteral("bf16"), QStringLiteral("f16")});
  dtype_->setToolTip(
      tr("Weights and KV cache precision: auto is bf16 on a GPU and f32 on the CPU; bf16/f16 halve the KV bytes"));
  form->addRow(tr("Precision"), dtype_);
  steps_ = new QSpinBox(what);
  steps_->setObjectName(QStringLiteral("stepsSpin"));
  steps_->setRange(2, 256);
  steps_->setValue(64);
  steps_->setToolTip(
      tr("MAR decoding steps: each step predicts a share of the tokens (cosine schedule). "
         "LazyMAR's default start/interval (5, 9) are the paper's 64-step setting; "
         "for 32 steps the paper uses start 4, interval 5"));
  steps_label_ = new QLabel(tr("Steps"), what);
  form->addRow(steps_label_, steps_);
  layout->addWidget(what);

  // Policy.
  auto* policyBox = new QGroupBox(tr("KV-cache policy"), this);
  auto* pl = new QVBoxLayout(policyBox);
  policy_combo_ = new QComboBox(policyBox);
  policy_combo_->setObjectName(QStringLiteral("policyCombo"));
  pl->addWidget(policy_combo_);
  policy_summary_ = new QLabel(policyBox);
  policy_summary_->setWordWrap(true);
  policy_summary_->setStyleSheet(QStringLiteral("color:#9aa0ad"));
  pl->addWidget(policy_summary_);
  budget_row_ = new QWidget(policyBox);
  auto* br = new QHBoxLayout(budget_row_);
  br->setContentsMargins(0, 0, 0, 0);
  budget_mode_ = new QComboBox(budget_row_);
  budget_mode_->addItem(tr("ρ"), kRho);
  budget_mode_->addItem(tr("tokens"), kTokens);
  budget_mode_->setToolTip(tr("Budget as a share ρ of the image tokens, or as a number of tokens per layer and head"));
  budget_slider_ = new QSlider(Qt::Horizontal, budget_row_);
  budget_slider_->setObjectName(QStringLiteral("budgetSlider"));
  budget_slider_->setToolTip(tr("KV budget: how many image tokens each layer and head may keep"));
  budget_label_ = new QLabel(budget_row_);
  budget_label_->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("256 tok")) + 4);
  budget_caption_ = new QLabel(tr("Budget"), budget_row_);
  br->addWidget(budget_caption_);
  br->addWidget(budget_mode_);
  br->addWidget(budget_slider_, 1);
  br->addWidget(budget_label_);
  pl->addWidget(budget_row_);
  form_ = new PolicyForm(policyBox);
  pl->addWidget(form_);
  spec_label_ = new QLabel(policyBox);
  spec_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  spec_label_->setStyleSheet(QStringLiteral("font-family: monospace; color:#c9d1d9"));
  spec_label_->setToolTip(tr(
      "The policy spec, as kvstudio-cli --policy takes it. Changes apply to a running generation at its next line."));
  pl->addWidget(spec_label_);
  layout->addWidget(policyBox);

  // Actions.
  auto* actions = new QHBoxLayout;
  generate_ = new QPushButton(tr("Generate"), this);
  generate_->setObjectName(QStringLiteral("generateButton"));
  generate_->setToolTip(tr("Generate (Ctrl+Enter)"));
  generate_->setMinimumHeight(34);
  generate_->setStyleSheet(
      QStringLiteral("QPushButton{background:#2f81f7;color:white;font-weight:bold;border-radius:5px;padding:4px 14px}"
                     "QPushButton:disabled{background:#3a3f4b;color:#8b919e}"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setToolTip(tr("Stop the generation (Esc)"));
  cancel_->setMinimumHeight(34);
  cancel_->setEnabled(false);
  connect(generate_, &QPushButton::clicked, this, &ParameterPanel::generateRequested);
  connect(cancel_, &QPushButton::clicked, this, &ParameterPanel::cancelRequested);
  actions->addWidget(generate_, 2);
  actions->addWidget(cancel_, 1);
  layout->addLayout(actions);
  layout->addStretch(1);

  connect(policy_combo_, &QComboBox::currentIndexChanged, this, &ParameterPanel::onPolicyChosen);
  connect(budget_mode_, &QComboBox::currentIndexChanged, this, &ParameterPanel::onBudgetModeChanged);
  connect(budget_slider_, &QSlider::valueChanged, this, [this] {
    updateBudgetLabel();
    emitSpec();
  });
  connect(form_, &PolicyForm::changed, this, &ParameterPanel::emitSpec);

  budget_slider_->setRange(1, 100);
  budget_slider_->setValue(25);
  refillPolicies();
  applyFamilyToSampling();
  applyConditioning();
  refillPromptHistory();
  onPolicyChosen();
}

void ParameterPanel::applyConditioning() {
  const bool text = takesPrompt();
  image_form_->setRowVisible(class_combo_, !text);
  image_form_->setRowVisible(prompt_box_, text);
  image_form_->setRowVisible(size_combo_, text && !model_.image_sizes.empty());
  applyFinishing();
  batch_label_->setText(text ? tr("Images") : tr("Batch"));
  batch_->setToolTip(text ? tr("Images the prompt makes together (the canvas follows the first; all go to the history)")
                          : tr("Images generated together (the canvas follows the first; all go to the history)"));
}

void ParameterPanel::refillPromptHistory() {
  const QSignalBlocker block(prompt_history_combo_);
  prompt_history_combo_->clear();
  prompt_history_combo_->addItem(prompt_history_.isEmpty() ? tr("No recent prompts") : tr("Recent prompts…"));
  for (const QString& p : prompt_history_) {
    // One line per prompt in the list; the whole text as its tooltip and data.
    QString line = p.simplified();
    if (line.size() > 80) line = line.left(79) + QChar(0x2026);
    prompt_history_combo_->addItem(line, p);
    prompt_history_combo_->setItemData(prompt_history_combo_->count() - 1, p, Qt::ToolTipRole);
  }
  prompt_history_combo_->setCurrentIndex(0);
  prompt_history_combo_->setEnabled(!prompt_history_.isEmpty());
}

void ParameterPanel::rememberPrompt(const QString& prompt) {
  GenerationSettings s;
  s.promptHistory = prompt_history_;
  s.rememberPrompt(prompt);
  prompt_history_ = s.promptHistory;
  history_cursor_ = -1;
  refillPromptHistory();
}

bool ParameterPanel::eventFilter(QObject* watched, QEvent* event) {
  if ((watched == prompt_edit_ || watched == negative_edit_) && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && (key->modifiers() & Qt::ControlModifier)) {
      if (generate_->isEnabled()) Q_EMIT generateRequested();
      return true;
    }
    const bool up = key->key() == Qt::Key_Up, down = key->key() == Qt::Key_Down;
    if (watched == prompt_edit_ && (up || down) && key->modifiers() == Qt::ControlModifier) {
      if (up && history_cursor_ + 1 < prompt_history_.size()) {
        if (history_cursor_ < 0) draft_ = prompt_edit_->toPlainText();
        ++history_cursor_;
      } else if (down && history_cursor_ >= 0) {
        --history_cursor_;
      } else {
        return true;
      }
      prompt_edit_->setPlainText(history_cursor_ < 0 ? draft_ : prompt_history_[history_cursor_]);
      prompt_edit_->moveCursor(QTextCursor::End);
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

QStringList ParameterPanel::offeredPolicies() const {
  QStringList out;
  for (int i = 0; i < policy_combo_->count(); ++i) out << policy_combo_->itemData(i).toString();
  return out;
}

// Only the registry's policies for this family: a raster-only policy is not
// offered for VAR, nor a KV policy for MAR (the registry's "families").
void ParameterPanel::refillPolicies() {
  const QString current = policy_combo_->currentData().toString();
  const QSignalBlocker block(policy_combo_);
  policy_combo_->clear();
  for (const auto& e : kvs::policy_catalog()) {
    if (!policyApplies(e, family())) continue;
    policy_combo_->addItem(QString::fromStdString(e.name), QString::fromStdString(e.name));
    policy_combo_->setItemData(policy_combo_->count() - 1,
                               QStringLiteral("%1\n%2").arg(QString::fromStdString(e.summary),
                                                            QString::fromStdString(e.reference)),
                               Qt::ToolTipRole);
  }
  const int keep = policy_combo_->findData(current);
  policy_combo_->setCurrentIndex(keep >= 0 ? keep : 0);
}

void ParameterPanel::applyFinishing() {
  const bool can = model_.finishes_pictures && model_.grid > 1;
  image_form_->setRowVisible(finish_box_, can);
  if (!can) return;
  const int rows = static_cast<int>(model_.grid);
  keep_rows_->setRange(1, rows - 1);
  keep_rows_->setSuffix(tr(" of %1").arg(rows));
  if (keep_rows_->value() < 1 || keep_rows_->value() >= rows) keep_rows_->setValue(rows / 2);
}

void ParameterPanel::applyFamilyToSampling() {
  const bool steps = family().has_request_option("steps");
  steps_->setVisible(steps);
  steps_label_->setVisible(steps);
  // Continuous tokens (a diffusion head samples them): top-k / top-p do not apply.
  const bool continuous = samplesContinuousTokens(family());
  top_k_->setEnabled(!continuous);
  top_p_->setEnabled(!continuous);
  if (continuous) {
    top_k_->setValue(0);
    top_p_->setValue(1.0);
  }
  const QString tip = tr("%1 samples continuous tokens: top-k/top-p do not apply").arg(familyDisplayName(family()));
  top_k_->setToolTip(continuous ? tip : tr("Sample among the k most likely tokens (0: off)"));
  top_p_->setToolTip(continuous ? tip
                                : tr("Sample among the most likely tokens holding this probability mass (1: off)"));
}

void ParameterPanel::setModel(const kvs::ModelSummary& model) { setModel(model, familyDescription(model.family)); }

void ParameterPanel::setModel(const kvs::ModelSummary& model, const kvs::FamilyDescription& family) {
  const int64_t previous = class_combo_->currentIndex();
  model_ = model;
  family_ = family;
  model_label_->setText(model.usable() ? QStringLiteral("<b>%1</b><br><span style='color:#9aa0ad'>%2</span>")
                                             .arg(QString::fromStdString(model.name).toHtmlEscaped(),
                                                  QString::fromStdString(model.architecture).toHtmlEscaped())
                                       : QStringLiteral("<b>%1</b><br><span style='color:#f85149'>%2</span>")
                                             .arg(QString::fromStdString(model.name).toHtmlEscaped(),
                                                  QString::fromStdString(model.problem).toHtmlEscaped()));
  {
    const QSignalBlocker block(class_combo_);
    class_combo_->clear();
    for (int64_t c = 0; c < model.num_classes; ++c)
      class_combo_->addItem(classLabel(c, model.class_names), static_cast<qlonglong>(c));
    class_combo_->setCurrentIndex(previous >= 0 && previous < model.num_classes ? static_cast<int>(previous) : 0);
  }
  const auto& d = model.sampling_defaults;
  cfg_->setValue(d.cfg_scale.value_or(4.0));
  temperature_->setValue(d.temperature.value_or(1.0));
  top_k_->setValue(static_cast<int>(d.top_k.value_or(0)));
  top_p_->setValue(d.top_p.value_or(1.0));
  // A trained bundle records the steps it was evaluated with (the MAR demo: 32).
  steps_->setValue(static_cast<int>(std::clamp<int64_t>(d.steps.value_or(64), steps_->minimum(), steps_->maximum())));
  {
    const QString kept = size_combo_->currentText();
    const QSignalBlocker block(size_combo_);
    size_combo_->clear();
    for (const std::string& size : model.image_sizes) size_combo_->addItem(QString::fromStdString(size));
    const int index = size_combo_->findText(kept);
    size_combo_->setCurrentIndex(index >= 0 ? index : 0);
  }
  refillPolicies();
  applyFamilyToSampling();
  applyConditioning();
  // A text model opens ready to generate: its suggested prompt fills an empty box.
  if (takesPrompt() && prompt_edit_->toPlainText().trimmed().isEmpty() && !model.example_prompts.empty())
    prompt_edit_->setPlainText(QString::fromStdString(model.example_prompts.front()));
  onPolicyChosen();
  onBudgetModeChanged();
}

SeedMode ParameterPanel::seedMode() const {
  return seed_random_each_->isChecked() ? SeedMode::RandomEachRun : SeedMode::Fixed;
}

void ParameterPanel::rollSeed() {
  seed_edit_->setText(QString::number(QRandomGenerator::global()->generate() & 0x7fffffffu));
}

void ParameterPanel::setLastSeed(quint64 seed) { last_seed_ = seed; }

void ParameterPanel::setRunning(bool running) {
  generate_->setEnabled(!running);
  cancel_->setEnabled(running);
}

GenerationSettings ParameterPanel::settings() const {
  GenerationSettings s;
  s.modelDir = QString::fromStdString(model_.dir);
  s.text = takesPrompt();
  s.classId = class_combo_->currentIndex() >= 0 ? class_combo_->currentData().toLongLong() : 0;
  s.prompt = prompt_edit_->toPlainText();
  s.negativePrompt = negative_edit_->toPlainText();
  s.negativePromptEnabled = negative_box_->isChecked();
  // The model's own size goes as "" (the request's default), so that a settings
  // file or a recalled PNG does not pin it.
  if (!model_.image_sizes.empty() && size_combo_->currentIndex() > 0) s.imageSize = size_combo_->currentText();
  s.promptHistory = prompt_history_;
  s.seed = seed_edit_->text().toULongLong();
  s.seedMode = seedMode();
  s.cfgScale = cfg_->value();
  s.temperature = temperature_->value();
  s.topK = top_k_->value();
  s.topP = top_p_->value();
  s.batch = batch_->value();
  s.steps = family().has_request_option("steps") ? steps_->value() : 0;
  if (family().has_request_option("cfg_schedule"))
    s.cfgSchedule = QString::fromStdString(model_.sampling_defaults.cfg_schedule.value_or(""));
  s.device = device_->currentData().toString();
  s.dtype = dtype_->currentText();
  s.policy = policySpec();
  if (model_.finishes_pictures && finish_box_->isChecked() && !finish_path_->text().trimmed().isEmpty()) {
    s.finishFrom = finish_path_->text().trimmed();
    s.keepRows = keep_rows_->value();
  }
  return s;
}

void ParameterPanel::setSettings(const GenerationSettings& s) {
  if (s.classId >= 0 && s.classId < class_combo_->count()) class_combo_->setCurrentIndex(static_cast<int>(s.classId));
  prompt_edit_->setPlainText(s.prompt);
  negative_edit_->setPlainText(s.negativePrompt);
  finish_box_->setChecked(!s.finishFrom.isEmpty());
  if (!s.finishFrom.isEmpty()) {
    finish_path_->setText(s.finishFrom);
    keep_rows_->setValue(static_cast<int>(s.keepRows));
  }
  negative_box_->setChecked(s.negativePromptEnabled);
  if (const int index = size_combo_->findText(s.imageSize); index >= 0 || s.imageSize.isEmpty())
    size_combo_->setCurrentIndex(std::max(index, 0));
  prompt_history_ = s.promptHistory;
  history_cursor_ = -1;
  refillPromptHistory();
  seed_edit_->setText(QString::number(s.seed));
  seed_random_each_->setChecked(s.seedMode == SeedMode::RandomEachRun);
  cfg_->setValue(s.cfgScale);
  temperature_->setValue(s.temperature);
  top_k_->setValue(static_cast<int>(s.topK));
  top_p_->setValue(s.topP);
  batch_->setValue(std::max(1, s.batch));
  if (s.steps > 0) steps_->setValue(static_cast<int>(s.steps));
  {
    std::vector<kvs::DeviceMenuEntry> entries;
    for (int i = 0; i < device_->count(); ++i)
      entries.push_back({device_->itemData(i).toString().toStdString(), {}, {}});
    device_->setCurrentIndex(kvs::device_menu_index(entries, s.device.toStdString()));
  }
  if (dtype_->findText(s.dtype) >= 0) dtype_->setCurrentText(s.dtype);
  setPolicySpec(s.policy);
}

QString ParameterPanel::policySpec() const {
  kvs::PolicySpec parts;
  parts.name = policy_combo_->currentData().toString().toStdString();
  parts.params = form_->changedValues();
  const kvs::PolicyDescription* entry = kvs::find_policy_entry(parts.name);
  if (kvs::policy_budget_kind(entry) == BudgetKind::CacheShare) {
    parts.params["budget"] = QString::number(budget_slider_->value() / 100.0, 'g', 4).toStdString();
  } else if (entry && entry->has_budget()) {
    if (budget_mode_->currentData().toInt() == kRho)
      parts.params["rho"] = QString::number(budget_slider_->value() / 100.0, 'g', 4).toStdString();
    else parts.params["budget"] = std::to_string(budget_slider_->value());
  }
  return QString::fromStdString(parts.text());
}

void ParameterPanel::setPolicySpec(const QString& spec) {
  kvs::PolicySpec parts;
  try {
    parts = kvs::parse_policy_spec(spec.toStdString());
  } catch (const std::exception&) {
    return;
  }
  const int index = policy_combo_->findData(QString::fromStdString(parts.name));
  if (index < 0) return;
  {
    const QSignalBlocker a(policy_combo_), b(budget_mode_), c(budget_slider_);
    policy_combo_->setCurrentIndex(index);
    form_->setPolicy(QString::fromStdString(parts.name));
    // The engine reads the spec's budget with the registry's precedence
    // (policy_budget.h); the slider shows what it read.
    const kvs::PolicyBudget budget = kvs::read_policy_budget(spec.toStdString());
    budget_mode_->setCurrentIndex(budget.unit == kvs::PolicyBudget::Unit::Tokens ? kTokens : kRho);
    onBudgetModeChanged();
    if (budget.unit == kvs::PolicyBudget::Unit::Tokens) budget_slider_->setValue(static_cast<int>(budget.value));
    else if (budget.unit == kvs::PolicyBudget::Unit::Share)
      budget_slider_->setValue(static_cast<int>(std::lround(budget.value * 100)));
    parts.params.erase("rho");
    parts.params.erase("budget");
    const QSignalBlocker d(form_);
    form_->setValues(parts.params);
  }
  const kvs::PolicyDescription* entry = kvs::find_policy_entry(parts.name);
  policy_summary_->setText(entry ? QString::fromStdString(entry->summary) : QString());
  showBudgetRowFor(entry);
  updateBudgetLabel();
  emitSpec();
}

void ParameterPanel::onPolicyChosen() {
  const QString name = policy_combo_->currentData().toString();
  form_->setPolicy(name);
  const kvs::PolicyDescription* entry = kvs::find_policy_entry(name.toStdString());
  policy_summary_->setText(entry ? QString::fromStdString(entry->summary) : QString());
  policy_summary_->setToolTip(entry ? QString::fromStdString(entry->reference) : QString());
  showBudgetRowFor(entry);
  if (kvs::policy_budget_kind(entry) == BudgetKind::CacheShare && budget_mode_->currentData().toInt() != kRho) {
    const QSignalBlocker block(budget_mode_);
    budget_mode_->setCurrentIndex(kRho);
    onBudgetModeChanged();
  }
  // The policy's default budget as the engine reads a spec without one (its
  // cache share, or its rho), shown when the slider is in shares.
  const kvs::PolicyBudget fallback = kvs::read_policy_budget(name.toStdString());
  if (fallback.unit == kvs::PolicyBudget::Unit::Share && budget_mode_->currentData().toInt() == kRho) {
    const QSignalBlocker block(budget_slider_);
    budget_slider_->setValue(static_cast<int>(std::lround(fallback.value * 100)));
  }
  updateBudgetLabel();
  emitSpec();
}

void ParameterPanel::showBudgetRowFor(const kvs::PolicyDescription* entry) {
  const BudgetKind kind = kvs::policy_budget_kind(entry);
  budget_row_->setVisible(kind != BudgetKind::None);
  // A share of the whole cache has no token form: rho/tokens is the raster pair.
  budget_mode_->setVisible(kind == BudgetKind::RhoOrTokens);
  budget_caption_->setText(kind == BudgetKind::CacheShare ? tr("Cache kept") : tr("Budget"));
  budget_slider_->setToolTip(kind == BudgetKind::CacheShare
                                 ? tr("Share of the whole KV cache kept, over all scales and heads (HeatKV's b)")
                                 : tr("KV budget: how many image tokens each layer and head may keep"));
}

void ParameterPanel::onBudgetModeChanged() {
  const int64_t tokens = model_.grid > 0 ? model_.grid * model_.grid : 256;
  const QSignalBlocker block(budget_slider_);
  const int old = budget_slider_->value();
  const bool wasRho = budget_slider_->maximum() == 100 && budget_slider_->minimum() == 1;
  if (budget_mode_->currentData().toInt() == kRho) {
    const int v = wasRho ? old : static_cast<int>(std::lround(100.0 * old / static_cast<double>(tokens)));
    budget_slider_->setRange(1, 100);
    budget_slider_->setValue(std::clamp(v, 1, 100));
  } else {
    const int v = wasRho ? static_cast<int>(std::lround(old / 100.0 * static_cast<double>(tokens))) : old;
    budget_slider_->setRange(1, static_cast<int>(tokens));
    budget_slider_->setValue(std::clamp(v, 1, static_cast<int>(tokens)));
  }
  updateBudgetLabel();
  emitSpec();
}

void ParameterPanel::updateBudgetLabel() {
  if (budget_mode_->currentData().toInt() == kRho)
    budget_label_->setText(QStringLiteral("%1%").arg(budget_slider_->value()));
  else budget_label_->setText(tr("%1 tok").arg(budget_slider_->value()));
}

void ParameterPanel::emitSpec() {
  const QString spec = policySpec();
  spec_label_->setText(spec);
  if (spec == last_spec_) return;
  last_spec_ = spec;
  Q_EMIT policySpecChanged(spec);
}

}  // namespace kvs::ui
