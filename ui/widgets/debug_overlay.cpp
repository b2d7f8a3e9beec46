#include "ui/widgets/debug_overlay.h"

#include <QFileInfo>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QTimer>
#include <QWheelEvent>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <vector>

#include "ui/bridge/generation_worker.h"
#include "ui/viewmodel/run_view_model.h"

#ifdef KVSTUDIO_HAVE_IMGUI
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#endif

namespace kvs::ui {

DebugOverlay::DebugOverlay(GenerationWorker* worker, QWidget* parent)
    : QOpenGLWidget(parent), worker_(worker), timer_(new QTimer(this)) {
  setObjectName(QStringLiteral("debugOverlay"));
  setMouseTracking(true);
  timer_->setInterval(50);  // 20 frames/s while visible
  connect(timer_, &QTimer::timeout, this, qOverload<>(&QWidget::update));
  clock_.start();
}

DebugOverlay::~DebugOverlay() { shutdownImGui(); }

void DebugOverlay::setRun(RunViewModel* run) { run_ = run; }

void DebugOverlay::showEvent(QShowEvent* event) {
  QOpenGLWidget::showEvent(event);
  timer_->start();
}

void DebugOverlay::hideEvent(QHideEvent* event) {
  timer_->stop();
  QOpenGLWidget::hideEvent(event);
}

void DebugOverlay::shutdownImGui() {
#ifdef KVSTUDIO_HAVE_IMGUI
  if (!context_) return;
  makeCurrent();
  ImGui::SetCurrentContext(context_);
  if (backend_ready_) ImGui_ImplOpenGL3_Shutdown();
  ImGui::DestroyContext(context_);
  context_ = nullptr;
  backend_ready_ = false;
  doneCurrent();
#endif
}

void DebugOverlay::initializeGL() {
#ifdef KVSTUDIO_HAVE_IMGUI
  // initializeGL runs again when the widget gets a new GL context (reparenting).
  if (context_) {
    ImGui::SetCurrentContext(context_);
    if (backend_ready_) ImGui_ImplOpenGL3_Shutdown();
    ImGui::DestroyContext(context_);
    context_ = nullptr;
  }
  context_ = ImGui::CreateContext();
  ImGui::SetCurrentContext(context_);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // layout is code, not a file in the working folder
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  if (QFileInfo::exists(QString::fromLatin1(font))) io.Fonts->AddFontFromFileTTF(font, 14.0f);
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 6;
  style.FrameRounding = 3;
  style.Colors[ImGuiCol_WindowBg] = ImVec4(0.07f, 0.08f, 0.10f, 0.94f);
  backend_ready_ = ImGui_ImplOpenGL3_Init("#version 330 core");
  connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, &DebugOverlay::shutdownImGui, Qt::UniqueConnection);
#endif
}

void DebugOverlay::paintGL() {
  auto* gl = context()->functions();
  const qreal dpr = devicePixelRatioF();
  gl->glViewport(0, 0, static_cast<int>(width() * dpr), static_cast<int>(height() * dpr));
  gl->glClearColor(0.06f, 0.07f, 0.09f, 1.0f);
  gl->glClear(GL_COLOR_BUFFER_BIT);
  const double now = clock_.elapsed() / 1000.0;
  const double dt = last_frame_s_ > 0 ? std::max(1e-4, now - last_frame_s_) : 1.0 / 60.0;
  last_frame_s_ = now;
  frame_ms_.push_back(static_cast<float>(dt * 1000.0));
  if (frame_ms_.size() > 120) frame_ms_.pop_front();
  ++frames_;
#ifdef KVSTUDIO_HAVE_IMGUI
  if (!context_ || !backend_ready_) return;
  ImGui::SetCurrentContext(context_);
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(static_cast<float>(width()), static_cast<float>(height()));
  io.DisplayFramebufferScale = ImVec2(static_cast<float>(dpr), static_cast<float>(dpr));
  io.DeltaTime = static_cast<float>(dt);
  ImGui_ImplOpenGL3_NewFrame();
  ImGui::NewFrame();
  drawUi();
  ImGui::Render();
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
#endif
}

void DebugOverlay::drawUi() {
#ifdef KVSTUDIO_HAVE_IMGUI
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::Begin("Engine internals (F12)", nullptr,
               ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                   ImGuiWindowFlags_NoSavedSettings);
  const RunViewModel* run = run_.data();
  const ImVec4 accent(0.35f, 0.80f, 0.72f, 1.0f), dim(0.60f, 0.63f, 0.70f, 1.0f);
  if (!run || run->state() == RunState::Idle) {
    ImGui::TextColored(dim, "No run yet: press Generate (Ctrl+Enter).");
  } else {
    const auto& s = run->started();
    ImGui::TextColored(accent, "%s", s.model_name.c_str());
    ImGui::SameLine();
    ImGui::TextColored(dim, "on %s  |  %s", s.device.c_str(), runStateText(run->state()).toUtf8().constData());
    ImGui::Text("policy  %s", run->activePolicy().toUtf8().constData());
  }

  if (ImGui::CollapsingHeader("Timings per phase", ImGuiTreeNodeFlags_DefaultOpen)) {
    if (ImGui::BeginTable("timings", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
      auto row = [](const char* name, const char* fmt, double v) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::TextUnformatted(name);
        ImGui::TableSetColumnIndex(1);
        ImGui::Text(fmt, v);
      };
      if (run) {
        row("model load + set-up", "%.0f ms", run->loadMs());
        row("last line (tokens + preview)", "%.1f ms", run->lastUnitMs());
        row("mean line", "%.1f ms", run->meanUnitMs());
        row("generation", "%.0f ms",
            run->totalMs() > 0 ? run->totalMs() : (run->memory().empty() ? 0.0 : run->memory().back().elapsed_ms));
        row("tokens / s (per image)", "%.1f", run->tokensPerSecond());
      }
      float mean = 0;
      for (float f : frame_ms_) mean += f;
      mean /= std::max<size_t>(1, frame_ms_.size());
      row("GUI frame interval (overlay, 20 Hz)", "%.1f ms", mean);
      if (worker_) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::TextUnformatted("event queue depth (now / max)");
        ImGui::TableSetColumnIndex(1);
        ImGui::Text("%d / %d", worker_->pendingEvents(), worker_->maxPendingEvents());
      }
      ImGui::EndTable();
    }
    std::vector<float> frames(frame_ms_.begin(), frame_ms_.end());
    if (!frames.empty())
      ImGui::PlotLines("##frames", frames.data(), static_cast<int>(frames.size()), 0, "frame ms", 0.0f, 100.0f,
                       ImVec2(ImGui::GetContentRegionAvail().x, 36));
  }

  const UnitDonePtr unit = run ? run->lastUnit() : UnitDonePtr();
  if (ImGui::CollapsingHeader("Retained per layer x head (budget in use)", ImGuiTreeNodeFlags_DefaultOpen)) {
    if (unit && unit->retained) {
      const kvs::RetainedMasks& m = *unit->retained;
      // Entries per head the full cache holds now (the engine states them per layer, all heads).
      const int64_t full = std::max<int64_t>(1, unit->full_entries_per_layer / std::max<int64_t>(1, m.kv_heads));
      const int columns = static_cast<int>(std::min<int64_t>(m.kv_heads, 62)) + 2;
      if (ImGui::BeginTable("heads", columns, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
        ImGui::TableSetupColumn("layer");
        for (int64_t h = 0; h < columns - 2; ++h) {
          char name[24];
          std::snprintf(name, sizeof(name), "H%lld", static_cast<long long>(h));
          ImGui::TableSetupColumn(name);
        }
        ImGui::TableSetupColumn("evicted, last unit");
        ImGui::TableHeadersRow();
        const auto& evicted = run->evictionsLastUnit();
        for (int64_t l = 0; l < m.n_layer; ++l) {
          ImGui::TableNextRow();
          ImGui::TableSetColumnIndex(0);
          ImGui::Text("L%lld", static_cast<long long>(l));
          for (int64_t h = 0; h < columns - 2; ++h) {
            int64_t count = 0;
            for (int64_t w = 0; w < m.words(); ++w)
              count += std::popcount(m.bits[static_cast<size_t>((l * m.kv_heads + h) * m.words() + w)]);
            const float share = static_cast<float>(count) / static_cast<float>(full);
            ImGui::TableSetColumnIndex(static_cast<int>(h) + 1);
            ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg,
                                   ImGui::GetColorU32(
                                       ImVec4(0.25f * share, 0.55f * share + 0.05f, 0.5f * share + 0.08f, 1.0f)));
            ImGui::Text("%lld", static_cast<long long>(count));
          }
          ImGui::TableSetColumnIndex(columns - 1);
          ImGui::Text("%lld", static_cast<long long>(
                                  l < static_cast<int64_t>(evicted.size()) ? evicted[static_cast<size_t>(l)] : 0));
        }
        ImGui::EndTable();
      }
      ImGui::TextColored(dim, "cached positions per (layer, KV head) of image 0, of %lld generated so far",
                         static_cast<long long>(full));
    } else {
      ImGui::TextColored(dim, "waiting for the first line");
    }
  }

  if (ImGui::CollapsingHeader("Evictions per unit", ImGuiTreeNodeFlags_DefaultOpen)) {
    const auto& per = run ? run->evictionsPerUnit() : std::vector<int64_t>{};
    std::vector<float> values(per.begin(), per.end());
    float top = 1;
    for (float v : values) top = std::max(top, v);
    if (!values.empty())
      ImGui::PlotHistogram("##evictions", values.data(), static_cast<int>(values.size()), 0, "all layers, image 0",
                           0.0f, top * 1.1f, ImVec2(ImGui::GetContentRegionAvail().x, 60));
    else ImGui::TextColored(dim, "no boundary yet");
  }

  if (ImGui::CollapsingHeader("KV memory", ImGuiTreeNodeFlags_DefaultOpen) && unit) {
    ImGui::Text("logical    %8.2f MiB", unit->kv_bytes_logical / 1048576.0);
    ImGui::Text("allocated  %8.2f MiB", unit->kv_bytes_allocated / 1048576.0);
    ImGui::Text("peak       %8.2f MiB", unit->kv_bytes_peak / 1048576.0);
    ImGui::Text("full equiv %8.2f MiB", unit->kv_bytes_full_equivalent / 1048576.0);
  }
  ImGui::End();
#endif
}

#ifdef KVSTUDIO_HAVE_IMGUI
namespace {
void setButtons(Qt::MouseButtons b) {
  ImGuiIO& io = ImGui::GetIO();
  io.MouseDown[0] = b & Qt::LeftButton;
  io.MouseDown[1] = b & Qt::RightButton;
  io.MouseDown[2] = b & Qt::MiddleButton;
}
}  // namespace
#endif

void DebugOverlay::mouseMoveEvent(QMouseEvent* event) {
#ifdef KVSTUDIO_HAVE_IMGUI
  if (context_) {
    ImGui::SetCurrentContext(context_);
    ImGui::GetIO().MousePos = ImVec2(static_cast<float>(event->position().x()),
                                     static_cast<float>(event->position().y()));
    setButtons(event->buttons());
  }
#endif
  update();
}

void DebugOverlay::mousePressEvent(QMouseEvent* event) { mouseMoveEvent(event); }
void DebugOverlay::mouseReleaseEvent(QMouseEvent* event) { mouseMoveEvent(event); }

void DebugOverlay::wheelEvent(QWheelEvent* event) {
#ifdef KVSTUDIO_HAVE_IMGUI
  if (context_) {
    ImGui::SetCurrentContext(context_);
    ImGui::GetIO().MouseWheel += static_cast<float>(event->angleDelta().y()) / 120.0f;
  }
#endif
  update();
}

}  // namespace kvs::ui
