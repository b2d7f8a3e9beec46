#include "ui/widgets/prompt_attention_strip.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "ui/render/overlay_images.h"
#include "ui/viewmodel/run_view_model.h"

namespace kvs::ui {
namespace {

constexpr int kPadX = 3, kPadY = 2, kJoin = 1, kWordGap = 7, kRowGap = 3, kMargin = 4;
const QColor kTagText(139, 145, 158);
const QColor kCaption(154, 160, 173);

// One colour of the attention heatmap's colormap for a value in 0..1.
QColor colormapColor(double v) {
  static const QImage bar = colormapBar(256, 1);
  return QColor(bar.pixel(std::clamp(static_cast<int>(std::lround(v * 255.0)), 0, 255), 0));
}

bool isTemplateTag(const QString& s) {
  if (s.size() < 3 || !s.startsWith(QLatin1Char('<')) || !s.endsWith(QLatin1Char('>'))) return false;
  return std::none_of(s.begin(), s.end(), [](QChar c) { return c.isSpace(); });
}

}  // namespace

QVector<PromptTokenCell> promptTokenCells(const std::vector<std::string>& labels) {
  QVector<PromptTokenCell> cells;
  bool previousIsTag = true;  // the first piece starts a word
  for (const std::string& label : labels) {
    QString text = QString::fromStdString(label);
    PromptTokenCell c;
    if (isTemplateTag(text)) {
      c.tag = true;
      c.startsWord = true;
    } else if (!text.isEmpty() && text.trimmed().isEmpty()) {
      // Template newlines and lone spaces: visible, dimmed, a word of their own.
      c.tag = true;
      c.startsWord = true;
      text = text.contains(QLatin1Char('\n')) ? QString(text.count(QLatin1Char('\n')), QChar(0x21B5))
                                              : QStringLiteral("␣");
    } else {
      const bool marked = !text.isEmpty() && (text.front() == QLatin1Char(' ') || text.front() == QChar(0x0120) ||
                                              text.front() == QChar(0x2581));
      if (marked) text.remove(0, 1);
      c.startsWord = marked || previousIsTag;
      text.replace(QLatin1Char('\n'), QChar(0x21B5));
    }
    c.text = text.isEmpty() ? QStringLiteral("·") : text;
    previousIsTag = c.tag;
    cells.push_back(c);
  }
  return cells;
}

PromptAttentionStrip::PromptAttentionStrip(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
  setVisible(false);
}

void PromptAttentionStrip::setRun(RunViewModel* run) {
  for (auto& c : connections_) QObject::disconnect(c);
  connections_.clear();
  run_ = run;
  if (run_) {
    connections_.push_back(connect(run_, &RunViewModel::progressChanged, this, &PromptAttentionStrip::refresh));
    connections_.push_back(connect(run_, &RunViewModel::unitChanged, this, &PromptAttentionStrip::refresh));
    connections_.push_back(connect(run_, &QObject::destroyed, this, [this] { run_ = nullptr; }));
  }
  refresh();
}

void PromptAttentionStrip::setOverlayEnabled(bool enabled) {
  overlay_enabled_ = enabled;
  refresh();
}

void PromptAttentionStrip::refresh() {
  const std::vector<std::string> none;
  const std::vector<std::string>& labels = run_ ? run_->conditionLabels() : none;
  const QVector<PromptTokenCell> cells = promptTokenCells(labels);
  const bool relayout = cells.size() != cells_.size() ||
                        !std::equal(cells.begin(), cells.end(), cells_.begin(), [](const auto& a, const auto& b) {
                          return a.text == b.text && a.startsWord == b.startsWord;
                        });
  cells_ = cells;
  shares_ = run_ ? run_->promptAttention() : std::vector<double>{};
  // The full scale is the prompt's own most attended token: the first template
  // tokens are usually an attention sink that would leave every word dark.
  scale_max_ = 0;
  for (int i = 0; i < cells_.size() && static_cast<size_t>(i) < shares_.size(); ++i)
    if (!cells_[i].tag) scale_max_ = std::max(scale_max_, shares_[static_cast<size_t>(i)]);
  if (scale_max_ <= 0)
    for (double v : shares_) scale_max_ = std::max(scale_max_, v);
  setVisible(overlay_enabled_ && !cells_.isEmpty());
  if (relayout) updateGeometry();
  update();
}

double PromptAttentionStrip::cellShare(int index) const {
  return index >= 0 && static_cast<size_t>(index) < shares_.size() ? shares_[static_cast<size_t>(index)] : 0.0;
}

double PromptAttentionStrip::cellShade(int index) const {
  if (scale_max_ <= 0) return 0;
  return std::sqrt(std::clamp(cellShare(index) / scale_max_, 0.0, 1.0));
}

QColor PromptAttentionStrip::cellColor(int index) const {
  QColor c = colormapColor(cellShade(index));
  if (index >= 0 && index < cells_.size() && cells_[index].tag) c.setAlpha(110);
  return c;
}

QRect PromptAttentionStrip::cellRect(int index) const {
  const QVector<QRect> rects = layoutCells(width());
  return index >= 0 && index < rects.size() ? rects[index] : QRect();
}

QVector<QRect> PromptAttentionStrip::layoutCells(int width) const {
  QVector<QRect> rects;
  const QFontMetrics fm(font());
  const int rowHeight = fm.height() + 2 * kPadY;
  const int top = kMargin + fm.height() + kRowGap;  // under the caption
  const int right = std::max(width - kMargin, kMargin + 40);
  int x = kMargin, y = top;
  for (int i = 0; i < cells_.size(); ++i) {
    const PromptTokenCell& c = cells_[i];
    const int w = fm.horizontalAdvance(c.text) + 2 * kPadX;
    if (i > 0) x += c.startsWord ? kWordGap : kJoin;
    // Wrap before a word that does not fit (a piece inside a long word wraps alone).
    int wordWidth = w;
    if (c.startsWord)
      for (int j = i + 1; j < cells_.size() && !cells_[j].startsWord; ++j)
        wordWidth += kJoin + fm.horizontalAdvance(cells_[j].text) + 2 * kPadX;
    if (x > kMargin && x + (c.startsWord ? std::min(wordWidth, right - kMargin) : w) > right) {
      x = kMargin;
      y += rowHeight + kRowGap;
    }
    rects.push_back(QRect(x, y, w, rowHeight));
    x += w;
  }
  return rects;
}

int PromptAttentionStrip::heightForWidth(int width) const {
  const QFontMetrics fm(font());
  const QVector<QRect> rects = layoutCells(width);
  const int bottom = rects.isEmpty() ? kMargin + fm.height() : rects.back().bottom() + 1;
  return bottom + kMargin;
}

QSize PromptAttentionStrip::sizeHint() const {
  const int w = std::max(200, width());
  return {w, heightForWidth(w)};
}

QSize PromptAttentionStrip::minimumSizeHint() const {
  const QFontMetrics fm(font());
  return {100, 2 * kMargin + 2 * fm.height() + kRowGap + 2 * kPadY};
}

void PromptAttentionStrip::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  const QFontMetrics fm(font());
  p.setPen(kCaption);
  // Raster families read the prompt by self-attention, token by token; a
  // next-scale family (Infinity) by cross-attention, a whole scale at a time.
  const bool scales = run_ && run_->family().unit == kvs::GenerationUnit::Scale;
  const QString caption = !shares_.empty()
                              ? (scales ? tr("Prompt · cross-attention of the latest scale (brighter: more)")
                                        : tr("Prompt · attention of the latest image token (brighter: more)"))
                          : scales ? tr("Prompt · attention appears with the first scale")
                                   : tr("Prompt · attention appears with the first line");
  p.drawText(QRect(kMargin, kMargin, width() - 2 * kMargin, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, caption);
  const QVector<QRect> rects = layoutCells(width());
  for (int i = 0; i < cells_.size(); ++i) {
    const QRect& r = rects[i];
    const double shade = cellShade(i);
    p.fillRect(r, shares_.empty() ? QColor(48, 52, 62) : cellColor(i));
    QColor text = cells_[i].tag ? kTagText
                                : (shade > 0.6 && !shares_.empty() ? QColor(20, 20, 24) : QColor(230, 237, 243));
    p.setPen(text);
    p.drawText(r.adjusted(kPadX, 0, -kPadX, 0), Qt::AlignCenter, cells_[i].text);
  }
}

bool PromptAttentionStrip::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QVector<QRect> rects = layoutCells(width());
    for (int i = 0; i < rects.size(); ++i)
      if (rects[i].contains(help->pos())) {
        QToolTip::showText(help->globalPos(),
                           tr("%1 (position %2): %3 % of the attention on the prompt")
                               .arg(cells_[i].text)
                               .arg(i)
                               .arg(cellShare(i) * 100.0, 0, 'f', 1),
                           this, rects[i]);
        return true;
      }
    QToolTip::hideText();
    e->ignore();
    return true;
  }
  return QWidget::event(e);
}

}  // namespace kvs::ui
