#include "ui/widgets/compare_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStackedLayout>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "ui/render/overlay_images.h"
#include "ui/viewmodel/compare_view_model.h"
#include "ui/widgets/generation_canvas.h"
#include "ui/widgets/image_view.h"
#include "ui/widgets/memory_panel.h"
#include "ui/widgets/split_view.h"

namespace kvs::ui {
namespace {

QTableWidgetItem* cell(const QString& text, bool right = true) {
  auto* item = new QTableWidgetItem(text);
  item->setTextAlignment(Qt::AlignVCenter | (right ? Qt::AlignRight : Qt::AlignLeft));
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  return item;
}

QString number(double v, int decimals) {
  if (std::isnan(v)) return QStringLiteral("—");
  if (std::isinf(v)) return QStringLiteral("∞");
  return QString::number(v, 'f', decimals);
}

}  // namespace

CompareView::CompareView(CompareViewModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);

  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Policies"), this));
  for (int i = 0; i < CompareViewModel::kMaxConfigs; ++i) {
    auto* edit = new QComboBox(this);
    edit->setEditable(true);
    edit->addItems(comparePresets(*family_));
    edit->setMinimumContentsLength(11);
    edit->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    edit->lineEdit()->setPlaceholderText(i < 2 ? tr("policy spec") : tr("(optional)"));
    edit->setToolTip(
        tr("A policy spec, e.g. linear:rho=0.25 or streaming:budget=64,sink=4; the full cache is always run as the "
           "reference"));
    controls->addWidget(edit, 1);
    config_edits_.push_back(edit);
  }
  run_ = new QPushButton(tr("Compare"), this);
  run_->setToolTip(tr("Run every configuration on the class and seed of the Generate tab (Ctrl+Shift+Enter)"));
  run_->setObjectName(QStringLiteral("compareButton"));
  run_->setStyleSheet(
      QStringLiteral("QPushButton{background:#2f81f7;color:white;font-weight:bold;border-radius:5px;padding:5px 14px}"
                     "QPushButton:disabled{background:#3a3f4b;color:#8b919e}"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  show_difference_ = new QCheckBox(tr("difference vs full"), this);
  show_difference_->setToolTip(tr("Show each pane as a heatmap of its per-pixel difference from the full-cache image"));
  controls->addWidget(run_);
  controls->addWidget(cancel_);
  controls->addWidget(show_difference_);
  layout->addLayout(controls);
  status_ = new QLabel(this);
  status_->setStyleSheet(QStringLiteral("color:#9aa0ad"));
  layout->addWidget(status_);

  auto* splitter = new QSplitter(Qt::Vertical, this);
  panes_host_ = new QWidget(splitter);
  panes_layout_ = new QGridLayout(panes_host_);
  panes_layout_->setContentsMargins(0, 0, 0, 0);
  panes_layout_->setSpacing(6);
  auto* placeholder =
      new QLabel(tr("Pick 2–4 policy configurations and press Compare: each runs on the same class and seed, "
                    "one after another, next to the full cache."),
                 panes_host_);
  placeholder->setAlignment(Qt::AlignCenter);
  placeholder->setWordWrap(true);
  placeholder->setStyleSheet(QStringLiteral("color:#9aa0ad"));
  panes_layout_->addWidget(placeholder, 0, 0);
  splitter->addWidget(panes_host_);

  auto* bottom = new QWidget(splitter);
  auto* bl = new QHBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  table_ = new QTableWidget(0, 8, bottom);
  table_->setObjectName(QStringLiteral("compareTable"));
  table_->setHorizontalHeaderLabels(
      {tr("policy"), tr("KV end"), tr("% full"), tr("peak"), tr("tok/s"), tr("agree"), tr("PSNR"), tr("SSIM")});
  const QStringList headerTips = {tr("policy spec"),
                                  tr("KV bytes retained at the end"),
                                  tr("share of the full cache"),
                                  tr("peak KV bytes allocated"),
                                  tr("tokens per second per image"),
                                  tr("share of tokens equal to the full cache's"),
                                  tr("PSNR against the full-cache image, dB (∞: identical)"),
                                  tr("SSIM against the full-cache image")};
  for (int c = 0; c < 8; ++c) {
    table_->horizontalHeaderItem(c)->setToolTip(headerTips[c]);
    table_->horizontalHeader()->setSectionResizeMode(c, c == 0 ? QHeaderView::Stretch : QHeaderView::ResizeToContents);
  }
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);
  table_->setToolTip(
      tr("Each policy against the full cache on the same class and seed (image 0). "
         "PSNR/SSIM: engine/metrics conventions (8-bit, SSIM 11x11 Gaussian window)."));
  bl->addWidget(table_, 5);
  auto* splitBox = new QWidget(bottom);
  auto* sl = new QVBoxLayout(splitBox);
  sl->setContentsMargins(0, 0, 0, 0);
  auto* chooser = new QHBoxLayout;
  split_a_ = new QComboBox(splitBox);
  split_b_ = new QComboBox(splitBox);
  auto* flip = new QPushButton(tr("Flip"), splitBox);
  flip->setToolTip(tr("Swap A and B"));
  chooser->addWidget(new QLabel(tr("A"), splitBox));
  chooser->addWidget(split_a_, 1);
  chooser->addWidget(new QLabel(tr("B"), splitBox));
  chooser->addWidget(split_b_, 1);
  chooser->addWidget(flip);
  sl->addLayout(chooser);
  split_ = new SplitView(splitBox);
  sl->addWidget(split_, 1);
  bl->addWidget(splitBox, 2);
  splitBox->setMaximumWidth(300);
  splitter->addWidget(bottom);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  splitter->setSizes({520, 330});
  table_->setMinimumWidth(420);
  layout->addWidget(splitter, 1);

  connect(run_, &QPushButton::clicked, this, [this] { Q_EMIT runRequested(configs()); });
  connect(cancel_, &QPushButton::clicked, this, &CompareView::cancelRequested);
  connect(show_difference_, &QCheckBox::toggled, this, &CompareView::refreshDifferences);
  connect(flip, &QPushButton::clicked, this, [this] {
    const int a = split_a_->currentIndex();
    split_a_->setCurrentIndex(split_b_->currentIndex());
    split_b_->setCurrentIndex(a);
  });
  connect(split_a_, &QComboBox::currentIndexChanged, this, &CompareView::refreshSplit);
  connect(split_b_, &QComboBox::currentIndexChanged, this, &CompareView::refreshSplit);
  connect(model_, &CompareViewModel::panesChanged, this, &CompareView::rebuildPanes);
  connect(model_, &CompareViewModel::rowsChanged, this, &CompareView::refreshTable);
  connect(model_, &CompareViewModel::finished, this, [this] {
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    status_->setText(tr("Done: %1 configurations on the same class and seed (%2).")
                         .arg(model_->paneCount())
                         .arg(compareScheduleText(model_->schedule())));
    refreshDifferences();
    refreshSplit();
  });
  setConfigs({QStringLiteral("full")});  // the family's presets arrive with setFamily
}

QStringList CompareView::configs() const {
  QStringList out;
  for (QComboBox* e : config_edits_)
    if (!e->currentText().trimmed().isEmpty()) out << e->currentText().trimmed();
  return out;
}

void CompareView::setFamily(const kvs::FamilyDescription& family) {
  if (&family == family_) return;
  family_ = &family;
  const QStringList presets = comparePresets(family);
  for (QComboBox* e : config_edits_) {
    const QSignalBlocker block(e);
    e->clear();
    e->addItems(presets);
  }
  // Two configurations of this family next to the full reference.
  setConfigs({presets.value(1), presets.value(2), presets.value(3)});
  const bool flops = showsFlops();
  // Token agreement compares token ids (CompareViewModel::computeRows).
  const bool agreement = !samplesContinuousTokens(family);
  const QStringList headers = flops ? QStringList{tr("policy"), tr("GFLOP"), tr("% full"), tr("uncond."),
                                                  tr("tok/s"),  tr("agree"), tr("PSNR"),   tr("SSIM")}
                                    : QStringList{tr("policy"), tr("KV end"), tr("% full"), tr("peak"),
                                                  tr("tok/s"),  tr("agree"),  tr("PSNR"),   tr("SSIM")};
  table_->setHorizontalHeaderLabels(headers);
  // Without a KV cache there is no peak, without token ids no agreement: hide
  // what would be all dashes.
  table_->setColumnHidden(3, flops);
  table_->setColumnHidden(5, !agreement);
  table_->horizontalHeaderItem(5)->setToolTip(
      agreement ? tr("share of tokens equal to the full cache's")
                : tr("not meaningful here: the tokens are continuous latents (the order is fixed by the seed)"));
  if (flops) {
    table_->horizontalHeaderItem(1)->setToolTip(tr("FLOPs per image executed, counted"));
    table_->horizontalHeaderItem(2)->setToolTip(tr("share of the full recomputation's FLOPs"));
    table_->horizontalHeaderItem(3)->setToolTip(tr("no KV cache: this column is left empty"));
  } else {
    table_->horizontalHeaderItem(1)->setToolTip(tr("KV bytes retained at the end"));
    table_->horizontalHeaderItem(2)->setToolTip(tr("share of the full cache"));
    table_->horizontalHeaderItem(3)->setToolTip(tr("peak KV bytes allocated"));
  }
  refreshTable();
}

void CompareView::setConfigs(const QStringList& specs) {
  for (int i = 0; i < config_edits_.size(); ++i) config_edits_[i]->setCurrentText(specs.value(i));
}

void CompareView::rebuildPanes() {
  while (QLayoutItem* item = panes_layout_->takeAt(0)) {
    if (item->widget()) item->widget()->deleteLater();
    delete item;
  }
  panes_.clear();
  const int n = model_->paneCount();
  const int columns = n <= 3 ? n : (n == 4 ? 2 : 3);
  for (int i = 0; i < n; ++i) {
    RunViewModel* run = model_->pane(i);
    Pane pane;
    pane.frame = new QWidget(panes_host_);
    pane.frame->setObjectName(QStringLiteral("comparePane"));
    pane.frame->setAttribute(Qt::WA_StyledBackground);
    pane.frame->setStyleSheet(
        QStringLiteral("#comparePane{background:#1b1e24;border:1px solid #30363d;border-radius:6px}"));
    auto* v = new QVBoxLayout(pane.frame);
    v->setContentsMargins(6, 6, 6, 6);
    v->setSpacing(4);
    pane.title = new QLabel(QStringLiteral("<b>%1</b>%2")
                                .arg(model_->specs().value(i).toHtmlEscaped(), i == 0 ? tr(" · reference") : QString()),
                            pane.frame);
    v->addWidget(pane.title);
    auto* stack = new QStackedLayout;
    pane.stack = stack;
    pane.canvas = new GenerationCanvas(pane.frame);
    pane.canvas->setCompact(true);
    pane.canvas->setOverlays(kOverlayRegions);
    pane.canvas->setPlaceholder(tr("queued"));
    pane.canvas->setRun(run);
    pane.difference = new ImageView(pane.frame);
    stack->addWidget(pane.canvas);
    stack->addWidget(pane.difference);
    v->addLayout(stack, 1);
    pane.gauge = new MemoryGauge(pane.frame);
    pane.gauge->setCompact(true);
    pane.gauge->setRun(run);
    v->addWidget(pane.gauge);
    pane.stats = new QLabel(pane.frame);
    pane.stats->setStyleSheet(QStringLiteral("color:#9aa0ad"));
    v->addWidget(pane.stats);
    QLabel* stats = pane.stats;
    connect(run, &RunViewModel::progressChanged, stats, [run, stats] {
      stats->setText(QStringLiteral("%1 · %2/%3 tokens · %4 tok/s")
                         .arg(runStateText(run->state()))
                         .arg(run->tokensDone())
                         .arg(run->tokensTotal())
                         .arg(run->tokensPerSecond(), 0, 'f', 1));
    });
    panes_layout_->addWidget(pane.frame, i / columns, i % columns);
    panes_.push_back(pane);
  }
  {
    const QSignalBlocker a(split_a_), b(split_b_);
    split_a_->clear();
    split_b_->clear();
    for (int i = 0; i < n; ++i) {
      split_a_->addItem(model_->specs().value(i));
      split_b_->addItem(model_->specs().value(i));
    }
    split_a_->setCurrentIndex(0);
    split_b_->setCurrentIndex(n > 1 ? 1 : 0);
  }
  run_->setEnabled(!model_->running());
  cancel_->setEnabled(model_->running());
  status_->setText(model_->schedule() == CompareSchedule::Together
                       ? tr("Running %1 configurations at once…").arg(n)
                       : tr("Running %1 configurations one after another…").arg(n));
  refreshSplit();
}

void CompareView::refreshTable() {
  const auto& rows = model_->rows();
  table_->setRowCount(rows.size());
  for (int r = 0; r < rows.size(); ++r) {
    const CompareRow& row = rows[r];
    table_->setItem(r, 0, cell(row.policy + (row.reference ? tr(" (ref)") : QString()), false));
    table_->item(r, 0)->setToolTip(
        row.reference ? tr("%1: the reference every other row is compared with").arg(row.policy) : row.policy);
    if (showsFlops()) {
      const double reference = rows.isEmpty() ? 0 : rows.front().flops;
      table_->setItem(r, 1, cell(number(row.flops / 1e9, 2)));
      table_->setItem(r, 2,
                      cell(reference > 0 ? QStringLiteral("%1%").arg(100.0 * row.flops / reference, 0, 'f', 1)
                                         : QStringLiteral("—")));
      table_->setItem(r, 3, cell(QStringLiteral("—")));
    } else {
      table_->setItem(r, 1, cell(formatBytes(row.kvBytesFinal)));
      table_->setItem(r, 2,
                      cell(row.kvBytesFull > 0
                               ? QStringLiteral("%1%").arg(100.0 * row.kvBytesFinal / row.kvBytesFull, 0, 'f', 1)
                               : QStringLiteral("—")));
      table_->setItem(r, 3, cell(formatBytes(row.kvBytesPeak)));
    }
    table_->setItem(r, 4, cell(number(row.tokensPerSecond, 1)));
    table_->setItem(r, 5,
                    cell(std::isnan(row.tokenAgreement)
                             ? QStringLiteral("—")
                             : QStringLiteral("%1%").arg(row.tokenAgreement * 100, 0, 'f', 1)));
    table_->setItem(r, 6, cell(number(row.psnr, 2)));
    table_->setItem(r, 7, cell(number(row.ssim, 4)));
  }
}

void CompareView::refreshDifferences() {
  const bool diff = show_difference_->isChecked();
  const QImage reference = model_->paneCount() > 0 ? model_->pane(0)->preview() : QImage();
  for (int i = 0; i < panes_.size(); ++i) {
    QStackedLayout* stack = panes_[i].stack;
    int maxDiff = 0;
    const QImage heat = differenceHeatmap(reference, model_->pane(i)->preview(), 128, &maxDiff);
    panes_[i].difference->setImage(heat,
                                   i == 0 ? tr("reference") : tr("max |Δ| %1 of 255 (full scale 128)").arg(maxDiff));
    if (stack) stack->setCurrentIndex(diff && !heat.isNull() ? 1 : 0);
  }
}

void CompareView::refreshSplit() {
  const int a = split_a_->currentIndex(), b = split_b_->currentIndex();
  if (a < 0 || b < 0 || a >= model_->paneCount() || b >= model_->paneCount()) {
    split_->setImages({}, {}, {}, {});
    return;
  }
  split_->setImages(model_->pane(a)->preview(), split_a_->currentText(), model_->pane(b)->preview(),
                    split_b_->currentText());
}

}  // namespace kvs::ui
