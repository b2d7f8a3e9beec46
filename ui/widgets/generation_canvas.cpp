#include "ui/widgets/generation_canvas.h"

#include <QPainter>
#include <QPainterPath>

#include <algorithm>

#include "ui/render/overlay_images.h"
#include "ui/viewmodel/run_view_model.h"
#include "ui/widgets/canvas_constants.h"

namespace kvs::ui {

GenerationCanvas::GenerationCanvas(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_OpaquePaintEvent);
  setPlaceholder(tr("Press Generate (Ctrl+Enter) to stream an image here, unit by unit"));
}

void GenerationCanvas::setRun(RunViewModel* run) {
  if (run_) disconnect(run_, nullptr, this, nullptr);
  run_ = run;
  if (run_) {
    connect(run_, &RunViewModel::unitChanged, this, qOverload<>(&QWidget::update));
    connect(run_, &RunViewModel::progressChanged, this, qOverload<>(&QWidget::update));
    connect(run_, &RunViewModel::stateChanged, this, qOverload<>(&QWidget::update));
  }
  update();
}

void GenerationCanvas::setOverlays(unsigned flags) {
  overlays_ = flags;
  update();
}

void GenerationCanvas::setMaskSelection(int64_t layer, int64_t head) {
  mask_layer_ = layer;
  mask_head_ = head;
  update();
}

void GenerationCanvas::setAttentionOpacity(int alpha) {
  attention_alpha_ = std::clamp(alpha, 0, 255);
  update();
}

void GenerationCanvas::setCompact(bool compact) {
  compact_ = compact;
  update();
}

void GenerationCanvas::setPlaceholder(const QString& text) {
  placeholder_ = text;
  update();
}

QRect GenerationCanvas::layoutImageRect(bool withStrip, bool withLegend) const {
  const int margin = compact_ ? 4 : kMargin;
  QRect area = rect().adjusted(margin, margin, -margin, -margin);
  if (withLegend) area.setBottom(area.bottom() - (compact_ ? 22 : kLegendHeight));
  if (wantsScalePanel()) area.setRight(area.right() - kScalePanelWidth - kStripGap);
  const int stripSpace = withStrip ? kStripWidth + kStripGap : 0;
  const int side = std::max(16, std::min(area.width() - 2 * stripSpace, area.height()));
  // The run's token grid sets the picture's shape (Lumina-mGPT's and Infinity's
  // sizes are not all square): the longer edge takes the square's side.
  const int64_t gh = run_ ? run_->started().grid_height : 0, gw = run_ ? run_->started().grid_width : 0;
  int w = side, h = side;
  if (gh > 0 && gw > 0 && gh != gw) {
    if (gw > gh) h = std::max(16, static_cast<int>(side * gh / gw));
    else w = std::max(16, static_cast<int>(side * gw / gh));
  }
  return QRect(area.left() + (area.width() - w) / 2, area.top() + (area.height() - h) / 2, w, h);
}

bool GenerationCanvas::wantsScalePanel() const {
  return !compact_ && run_ && run_->family().overlays.scale_matrix &&
         (overlays_ & (kOverlayAttention | kOverlayRetained));
}

QRect GenerationCanvas::scalePanelRect(const QRect& image) const {
  const int right = rect().right() - kMargin;
  // As tall as the picture's longer edge, centred on it: a wide picture keeps the panel's full height.
  const int height = std::max(image.width(), image.height());
  return QRect(right - kScalePanelWidth + 1, image.center().y() - height / 2, kScalePanelWidth, height);
}

QRect GenerationCanvas::imageRect() const {
  const bool legend = overlays_ & (kOverlayAttention | kOverlayRetained | kOverlayRegions);
  // The condition strip sits left of the image where the family's painter has
  // condition positions in its attention maps (a line's class token, a step's
  // buffer); a next-scale sequence has none.
  const bool strip = (overlays_ & kOverlayAttention) && !(run_ && run_->family().unit == kvs::GenerationUnit::Scale);
  return layoutImageRect(strip, legend);
}

void GenerationCanvas::legendText(QPainter& p, int& x, int y, const QString& t) const {
  p.setPen(QColor(200, 204, 214));
  p.drawText(x, y + kSwatch - 1, t);
  x += p.fontMetrics().horizontalAdvance(t) + 14;
}

void GenerationCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(21, 23, 28));
  const QRect img = imageRect();
  const RunViewModel* run = run_.data();
  const bool hasImage = run && !run->preview().isNull();

  // Frame of the image area, with a faint token grid as the placeholder.
  p.fillRect(img, QColor(30, 33, 40));
  if (!hasImage) {
    p.setPen(QColor(160, 166, 180));
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * (compact_ ? 0.9 : 1.1));
    p.setFont(f);
    QString text = placeholder_;
    if (run && run->active()) text = runStateText(run->state());
    if (run && run->calibrating()) {
      const auto& c = *run->pendingCalibration();
      text = tr("Calibrating %1 for this model (first use: %2; 'kvstudio-cli calibrate --policy %3' stores it in the "
                "bundle)…")
                 .arg(QString::fromStdString(c.label), QString::fromStdString(c.work),
                      QString::fromStdString(c.policy));
    }
    if (run && run->state() == RunState::Failed) text = tr("Failed: %1").arg(run->errorMessage());
    p.drawText(img.adjusted(16, 16, -16, -16), Qt::AlignCenter | Qt::TextWordWrap, text);
    return;
  }
  // The painter follows what a unit of the family is: a token line, a scale
  // refining the whole image, a step filling tokens anywhere on the grid.
  switch (run->family().unit) {
    case kvs::GenerationUnit::Line: paintRaster(p, img); break;
    case kvs::GenerationUnit::Scale: paintScale(p, img); break;
    case kvs::GenerationUnit::Step: paintMasked(p, img); break;
  }
}

void GenerationCanvas::paintRaster(QPainter& p, const QRect& img) {
  const RunViewModel* run = run_.data();
  const kvs::StartedEvent& s = run->started();
  TokenGrid grid;
  grid.height = s.grid_height > 0 ? s.grid_height : 1;
  grid.width = s.grid_width > 0 ? s.grid_width : 1;
  grid.tokens_done = run->tokensDone();
  const auto& unit = run->lastUnit();
  if (unit && unit->retained)
    grid.condition_tokens = std::max<int64_t>(0, unit->retained->positions - grid.imageTokens());
  else if (unit && unit->attention)
    grid.condition_tokens = std::max<int64_t>(0, unit->attention->positions - grid.imageTokens());
  const double cell = static_cast<double>(img.width()) / static_cast<double>(grid.width);
  const bool finished = run->state() == RunState::Finished;

  const QImage& preview = run->preview();
  const bool upscale = img.width() >= 2 * preview.width();
  p.setRenderHint(QPainter::SmoothPixmapTransform, !upscale);
  p.drawImage(img, preview);
  p.setRenderHint(QPainter::SmoothPixmapTransform, false);

  // Lines not generated yet: the preview decodes placeholder codes there.
  const int64_t rowsDone = finished ? grid.height : std::min<int64_t>(grid.height, (unit ? unit->unit_index + 1 : 0));
  if (rowsDone < grid.height) {
    const int y = img.top() + static_cast<int>(rowsDone * cell);
    p.fillRect(QRect(img.left(), y, img.width(), img.bottom() - y + 1), QColor(16, 18, 24, 215));
  }

  TokenGrid shown = grid;
  shown.tokens_done = finished ? grid.imageTokens() : rowsDone * grid.width;
  if ((overlays_ & kOverlayAttention) && unit && unit->attention) {
    p.drawImage(img, attentionHeatmap(*unit->attention, shown, attention_alpha_));
    // Query token: the last token of the latest line.
    const int64_t q = unit->attention->query_position - grid.condition_tokens + 1;
    if (q >= 0 && q < grid.imageTokens()) {
      const QRectF qr(img.left() + (q % grid.width) * cell, img.top() + (q / grid.width) * cell, cell, cell);
      p.setPen(QPen(QColor(120, 255, 255), 2));
      p.drawRect(qr.adjusted(1, 1, -1, -1));
    }
    const int n = static_cast<int>(std::max<int64_t>(1, grid.condition_tokens));
    // A prompt's dozens of condition positions share the image's height (its
    // words are in the prompt strip under the canvas); a class token is one cell.
    const QRect strip(img.left() - kStripGap - kStripWidth, img.top(), kStripWidth,
                      std::min(img.height(), static_cast<int>(std::max(cell, 14.0) * n)));
    p.drawImage(strip, attentionConditionStrip(*unit->attention, grid));
    p.setPen(QColor(200, 204, 214));
    p.drawRect(strip.adjusted(0, 0, -1, -1));
    if (!compact_) {
      QFont f = font();
      f.setPointSizeF(f.pointSizeF() * 0.8);
      p.setFont(f);
      p.save();
      p.translate(strip.center().x() + 4, strip.bottom() + 8);
      p.rotate(90);
      p.drawText(0, 0, tr("cond %1%").arg(conditionAttentionShare(*unit->attention, grid) * 100, 0, 'f', 0));
      p.restore();
    }
  }
  // Evicted tokens: dark and hatched, above the heatmap, so that "evicted" never
  // reads as "little attention".
  if ((overlays_ & kOverlayRetained) && unit && unit->retained) {
    const QImage mask = retainedMaskOverlay(*unit->retained, shown, mask_layer_, mask_head_, 255);
    for (int y = 0; y < mask.height(); ++y)
      for (int x = 0; x < mask.width(); ++x) {
        const int a = qAlpha(mask.pixel(x, y));
        if (a == 0) continue;
        const QRectF r(img.left() + x * cell, img.top() + y * cell, cell, cell);
        p.fillRect(r, QColor(10, 11, 16, a * 110 / 255));  // dimmed, the picture still readable
        if (cell >= 5) p.fillRect(r, QBrush(QColor(170, 176, 190, a * 120 / 255), Qt::BDiagPattern));
      }
  }
  if (overlays_ & kOverlayGrid && cell >= 6) {
    p.setPen(QColor(255, 255, 255, 28));
    for (int64_t i = 1; i < grid.width; ++i) {
      const int x = img.left() + static_cast<int>(i * cell);
      p.drawLine(x, img.top(), x, img.bottom());
    }
    for (int64_t i = 1; i < grid.height; ++i) {
      const int y = img.top() + static_cast<int>(i * cell);
      p.drawLine(img.left(), y, img.right(), y);
    }
  }
  QVector<PolicyRegion> regions;
  if ((overlays_ & kOverlayRegions) && !finished) {
    TokenGrid g = grid;
    g.tokens_done = rowsDone * grid.width;
    regions = policyRegions(unit ? unit->regions : std::vector<kvs::CacheRegion>{}, g);
    p.setRenderHint(QPainter::Antialiasing, true);
    for (const PolicyRegion& region : regions) {
      QPainterPath path;
      for (const QRect& r : region.rects)
        path.addRect(QRectF(img.left() + r.x() * cell, img.top() + r.y() * cell, r.width() * cell, r.height() * cell));
      QColor fill = region.color;
      fill.setAlpha(38);
      p.fillPath(path.simplified(), fill);
      p.setPen(QPen(region.color, compact_ ? 1.5 : 2.2));
      p.drawPath(path.simplified());
    }
    p.setRenderHint(QPainter::Antialiasing, false);
  }
  // A finished picture: where the rows taken from it end and the model's begin.
  if (s.given_units > 0 && s.given_units < grid.height) {
    const int y = img.top() + static_cast<int>(s.given_units * cell);
    p.setPen(QPen(QColor(255, 196, 70), compact_ ? 1.5 : 2.0, Qt::DashLine));
    p.drawLine(img.left(), y, img.right(), y);
    if (!compact_) {
      const QString label = tr("%n row(s) given above, drawn below", "", static_cast<int>(s.given_units));
      QFont f = font();
      f.setPointSizeF(f.pointSizeF() * 0.85);
      p.setFont(f);
      const QRect box = p.fontMetrics().boundingRect(label).adjusted(-4, -2, 4, 2);
      const QRect at(img.right() - box.width() - 6, y - box.height() - 3, box.width(), box.height());
      p.fillRect(at, QColor(16, 18, 24, 200));
      p.setPen(QColor(255, 196, 70));
      p.drawText(at, Qt::AlignCenter, label);
    }
  }
  p.setPen(QColor(70, 75, 88));
  p.drawRect(img.adjusted(0, 0, -1, -1));

  // Legends.
  const bool legend = overlays_ & (kOverlayAttention | kOverlayRetained | kOverlayRegions);
  if (!legend || compact_) return;
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 0.85);
  p.setFont(f);
  int x = std::max(kMargin, img.left() - (overlays_ & kOverlayAttention ? kStripWidth + kStripGap : 0));
  int y = img.bottom() + 14;
  const int sw = kSwatch;
  auto text = [&](const QString& t) { legendText(p, x, y, t); };
  if (overlays_ & kOverlayAttention) {
    p.drawImage(QRect(x, y, 90, sw), colormapBar(90, 1));
    x += 96;
    QString layer = unit && unit->attention && unit->attention->layer >= 0 ? tr("L%1").arg(unit->attention->layer)
                                                                           : tr("mean L");
    QString head = unit && unit->attention && unit->attention->head >= 0 ? tr("H%1").arg(unit->attention->head)
                                                                         : tr("mean H");
    text(tr("attention (%1, %2)").arg(layer, head));
  }
  if (overlays_ & kOverlayRetained) {
    drawSwatch(p, QRect(x, y, sw, sw), QColor(10, 11, 16, 190));
    p.fillRect(QRect(x, y, sw, sw), QBrush(QColor(170, 176, 190, 150), Qt::BDiagPattern));
    x += sw + 5;
    const QString l = mask_layer_ < 0 ? tr("all layers") : tr("L%1").arg(mask_layer_);
    const QString h = mask_head_ < 0 ? tr("all heads") : tr("H%1").arg(mask_head_);
    text(tr("evicted (%1, %2)").arg(l, h));
  }
  y += sw + 8;
  x = std::max(kMargin, img.left() - (overlays_ & kOverlayAttention ? kStripWidth + kStripGap : 0));
  for (const PolicyRegion& region : regions) {
    if (x > width() - 120) break;
    drawSwatch(p, QRect(x, y, sw, sw), QColor(region.color.red(), region.color.green(), region.color.blue(), 60),
               region.color);
    x += sw + 5;
    text(region.label);
  }
}

}  // namespace kvs::ui
