#pragma once
// The cache map, by what the family's unit events carry. Retained masks on a
// token grid: every layer x KV head's
// retained-token mask as a grid of tiny tiles, where per-head policies (HeadKV's
// local vs global heads) become visible; clicking a tile selects that
// layer/head for the canvas mask. With a scale matrix (VAR): one tile per layer, heads
// (rows) x scales (columns), coloured by the share of each scale the head still
// caches; clicking selects the layer. With recomputed tokens (MAR): no KV cache;
// the generation order of the tokens and this step's recomputed vs reused tokens.
#include <QPointer>
#include <QWidget>

class QPainter;

#include <cstdint>

namespace kvs::ui {

class RunViewModel;

class SmallMultiplesView : public QWidget {
  Q_OBJECT

 public:
  explicit SmallMultiplesView(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  void setSelection(int64_t layer, int64_t head);
  QSize sizeHint() const override { return {300, 260}; }
  QSize minimumSizeHint() const override { return {140, 120}; }

 Q_SIGNALS:
  void tileClicked(int64_t layer, int64_t head);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  struct Layout {
    int64_t layers = 0, heads = 0;
    double tile = 0, gap = 3, left = 0, top = 0;
  };
  Layout layout() const;
  void paintScaleTiles(QPainter& p);
  void paintMaskedTiles(QPainter& p);

  QPointer<RunViewModel> run_;
  int64_t layer_ = -1, head_ = -1;
};

}  // namespace kvs::ui
