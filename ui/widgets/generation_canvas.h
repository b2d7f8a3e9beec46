#pragma once
// The image as it is generated, line by line, with toggleable overlays and their
// legends: the attention of the latest token (heatmap + condition-token strip),
// the retained-token mask of the chosen layer/head (evicted tokens dimmed), the
// policy's regions and the current line. Paints from a RunViewModel.
#include <QPointer>
#include <QWidget>

#include <cstdint>

namespace kvs::ui {

class RunViewModel;

enum OverlayFlag : unsigned {
  kOverlayNone = 0,
  kOverlayAttention = 1u << 0,
  kOverlayRetained = 1u << 1,
  kOverlayRegions = 1u << 2,
  kOverlayGrid = 1u << 3,
};

class GenerationCanvas : public QWidget {
  Q_OBJECT

 public:
  explicit GenerationCanvas(QWidget* parent = nullptr);

  void setRun(RunViewModel* run);
  void setOverlays(unsigned flags);
  unsigned overlays() const { return overlays_; }
  void setMaskSelection(int64_t layer, int64_t head);  // -1: all
  void setAttentionOpacity(int alpha);                 // 0-255
  void setCompact(bool compact);                       // compare panes: smaller legends
  void setPlaceholder(const QString& text);

  QRect imageRect() const;  // where the image is drawn, in widget coordinates
  QSize sizeHint() const override { return {560, 600}; }
  QSize minimumSizeHint() const override { return {160, 160}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QRect layoutImageRect(bool withStrip, bool withLegend) const;

  QPointer<RunViewModel> run_;
  unsigned overlays_ = kOverlayAttention | kOverlayRegions;
  int64_t mask_layer_ = -1, mask_head_ = -1;
  int attention_alpha_ = 170;
  bool compact_ = false;
  QString placeholder_;
};

}  // namespace kvs::ui
