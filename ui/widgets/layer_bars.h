#pragma once
// The retained KV entries of each layer as bars (the tokens recomputed per unit
// for a family with recomputed tokens among its overlays).
#include <QPointer>
#include <QWidget>

class QPainter;

namespace kvs::ui {

class RunViewModel;

class LayerBars : public QWidget {
  Q_OBJECT
 public:
  explicit LayerBars(QWidget* parent = nullptr);
  void setRun(RunViewModel* run);
  QSize sizeHint() const override { return {280, 120}; }
  QSize minimumSizeHint() const override { return {160, 70}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  void paintRecomputedPerStep(QPainter& p);
  QPointer<RunViewModel> run_;
};

}  // namespace kvs::ui
