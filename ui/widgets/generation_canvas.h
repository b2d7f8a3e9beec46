#pragma once
// The image as it is generated, unit by unit, with toggleable overlays and their
// legends; the painter follows what a unit of the family is (FamilyDescription::unit):
// - raster (line by line): the attention of the latest token (heatmap +
//   condition-token strip), the retained-token mask of the chosen layer/head
//   (evicted tokens dimmed), the regions the policy reports and the current line;
// - next-scale (scale by scale, the whole image refined each time): where the
//   latest scale's queries look on the image, and a side panel with the
//   scale-to-scale attention mass and, per head, the share of each scale the
//   chosen layer still caches;
// - masked (step by step, tokens in generation order): tokens not generated yet
//   dimmed, the tokens predicted now outlined, the tokens whose features LazyMAR
//   reused (vs recomputed) hatched, and the new tokens' attention.
// Paints from a RunViewModel.
#include <QPointer>
#include <QWidget>

class QPainter;

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
  bool wantsScalePanel() const;
  QRect scalePanelRect(const QRect& image) const;
  void paintRaster(QPainter& p, const QRect& img);
  void paintScale(QPainter& p, const QRect& img);
  void paintMasked(QPainter& p, const QRect& img);
  void paintScalePanel(QPainter& p, const QRect& panel);
  // Legend row helpers: x advances along the row.
  void legendText(QPainter& p, int& x, int y, const QString& text) const;

  QPointer<RunViewModel> run_;
  unsigned overlays_ = kOverlayAttention | kOverlayRegions;
  int64_t mask_layer_ = -1, mask_head_ = -1;
  int attention_alpha_ = 170;
  bool compact_ = false;
  QString placeholder_;
};

}  // namespace kvs::ui
