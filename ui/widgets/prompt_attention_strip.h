#pragma once
// The prompt under the canvas for text models: the condition positions' tokens
// as words, each shaded by the attention the current image token gives it
// (RunViewModel::promptAttention, the attention heatmap's colormap), so one can
// watch which words a line of the image looks at. Hidden while the run has no
// condition labels (class models) or the attention overlay is off.
#include <QColor>
#include <QRect>
#include <QString>
#include <QVector>
#include <QWidget>

#include <string>
#include <vector>

namespace kvs::ui {

class RunViewModel;

// One condition position as the strip shows it.
struct PromptTokenCell {
  QString text;            // readable: the word-start marker stripped, a newline as "↵"
  bool startsWord = true;  // a gap before it (the token began with a space, or is a tag)
  bool tag = false;        // a chat-template tag or a template newline: drawn dimmed
};

// Cells for StartedEvent::condition_labels: a piece with a leading space (or the
// byte-level "Ġ" / SentencePiece "▁" marker) starts a word, others join the
// word before; "<...>" tags and whitespace-only pieces are template parts.
QVector<PromptTokenCell> promptTokenCells(const std::vector<std::string>& labels);

class PromptAttentionStrip : public QWidget {
  Q_OBJECT

 public:
  explicit PromptAttentionStrip(QWidget* parent = nullptr);

  void setRun(RunViewModel* run);
  // Follows the window's attention overlay switch.
  void setOverlayEnabled(bool enabled);

  // What is drawn, for tests and tooltips: per condition position its cell, its
  // share of the condition positions' attention, its shade (0..1: the share
  // over the largest share of the prompt's own tokens, square-root gamma as the
  // heatmap) and its colour.
  int cellCount() const { return cells_.size(); }
  const PromptTokenCell& cell(int index) const { return cells_.at(index); }
  double cellShare(int index) const;
  double cellShade(int index) const;
  QColor cellColor(int index) const;
  QRect cellRect(int index) const;  // in widget coordinates at the current width

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void refresh();
  QVector<QRect> layoutCells(int width) const;

  RunViewModel* run_ = nullptr;
  bool overlay_enabled_ = true;
  QVector<PromptTokenCell> cells_;
  std::vector<double> shares_;
  double scale_max_ = 0;  // the largest share of a non-tag cell (the shading's full scale)
  std::vector<QMetaObject::Connection> connections_;
};

}  // namespace kvs::ui
