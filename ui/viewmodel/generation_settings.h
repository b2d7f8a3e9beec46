#pragma once
// What the parameter panel edits, as plain values: converts to the engine's
// GenerationRequest (and back, to recall an image's parameters) and persists in
// QSettings. No widgets.
#include <QString>
#include <QStringList>

#include <cstdint>

#include "engine/session/generation_request.h"

class QSettings;

namespace kvs::ui {

enum class SeedMode { Fixed, RandomEachRun };

struct GenerationSettings {
  QString modelDir;
  // What conditions the image: the class (class-conditional models) or, when
  // `text` is set (the model's description says Conditioning::Text), the
  // prompt and the optional negative prompt; `batch` is then the prompt's
  // image count.
  bool text = false;
  int64_t classId = 0;
  QString prompt;
  // Kept while switched off, so ticking the box again brings the text back;
  // off sends no negative prompt (the model's own unconditional row).
  QString negativePrompt;
  bool negativePromptEnabled = false;
  QStringList promptHistory;  // most recent first, at most kMaxPromptHistory
  // Models that write several sizes (Lumina-mGPT): "WIDTHxHEIGHT", "" = the model's own.
  QString imageSize;
  // Raster models with an encoder: the PNG whose top `keepRows` token rows are
  // given ("" = none). Not kept in the settings file: a run finishes a picture
  // only when the person asked for it in this window.
  QString finishFrom;
  int64_t keepRows = 0;
  quint64 seed = 0;
  SeedMode seedMode = SeedMode::Fixed;
  double cfgScale = 4.0;
  double temperature = 1.0;
  int64_t topK = 0;
  double topP = 1.0;
  int batch = 1;
  int64_t steps = 0;    // masked models: decoding steps, 0: 64
  QString cfgSchedule;  // masked models: "linear" | "constant", "": linear
  QString device = QStringLiteral("auto");
  QString dtype = QStringLiteral("auto");   // auto | f32 | bf16 | f16
  int threads = 0;                          // CPU threads, 0: all cores
  QString policy = QStringLiteral("full");  // spec, "linear:rho=1/4"
  int64_t attentionLayer = -1;              // -1: mean over layers
  int64_t attentionHead = -1;               // -1: mean over heads

  // The request the window submits: previews every line, rate-limited to a
  // quarter of the generation time; retained masks and attention maps on.
  kvs::GenerationRequest toRequest() const;
  // The parameters a request was made with (first class of the batch). The
  // prompt history is not part of a request: it stays empty.
  static GenerationSettings fromRequest(const kvs::GenerationRequest& request);
  // Puts `prompt` first in the history (once; trimmed; blank prompts ignored).
  void rememberPrompt(const QString& prompt);

  void save(QSettings& settings) const;
  static GenerationSettings load(QSettings& settings, const GenerationSettings& defaults);
};

// Prompts kept in the history.
constexpr int kMaxPromptHistory = 30;

// Preview decoding may take at most this share of the generation time.
constexpr double kPreviewMaxShare = 0.25;

}  // namespace kvs::ui
