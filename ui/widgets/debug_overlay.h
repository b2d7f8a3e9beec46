#pragma once
// F12: engine internals drawn with Dear ImGui inside a QOpenGLWidget, laid over
// the canvas: per-layer/per-head retained counts (budgets in use), evictions per
// line boundary, event queue depth, timings per phase, GUI frame time.
// Created on first use only: QOpenGLWidget needs a real GL platform (Xvfb/xcb in
// tests; the offscreen platform crashes on it, see docs/design.md#build-facts).
#include <QElapsedTimer>
#include <QOpenGLWidget>
#include <QPointer>

#include <deque>

class QTimer;
struct ImGuiContext;

namespace kvs::ui {

class GenerationWorker;
class RunViewModel;

class DebugOverlay : public QOpenGLWidget {
  Q_OBJECT

 public:
  DebugOverlay(GenerationWorker* worker, QWidget* parent = nullptr);
  ~DebugOverlay() override;

  void setRun(RunViewModel* run);
  int framesRendered() const { return frames_; }

 protected:
  void initializeGL() override;
  void paintGL() override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;

 private:
  void shutdownImGui();
  void drawUi();

  QPointer<GenerationWorker> worker_;
  QPointer<RunViewModel> run_;
  QTimer* timer_;
  ImGuiContext* context_ = nullptr;
  bool backend_ready_ = false;
  QElapsedTimer clock_;
  double last_frame_s_ = 0;
  std::deque<float> frame_ms_;
  int frames_ = 0;
};

}  // namespace kvs::ui
