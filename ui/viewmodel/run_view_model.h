#pragma once
// The state of one generation as the window shows it (main canvas, each compare
// pane): progress, the latest preview, cache maps and attention, the memory time
// series with policy-change markers, per-layer counts and evictions, timings —
// all as the engine's events state them — and the family's description.
// A plain QObject fed by GenerationWorker signals: testable without widgets.
#include <QElapsedTimer>
#include <QImage>
#include <QObject>
#include <QString>
#include <QVector>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/models/model_catalog.h"
#include "ui/bridge/engine_types.h"
#include "ui/viewmodel/model_family.h"

namespace kvs::ui {

class GenerationWorker;

enum class RunState { Idle, Loading, Running, Cancelling, Finished, Cancelled, Failed };
QString runStateText(RunState state);

struct MemorySample {
  int64_t unit = 0;              // unit (line / scale / step) index, 0-based, the sample was taken after
  int64_t kv_bytes_logical = 0;  // retained now
  int64_t kv_bytes_full = 0;     // the uncompressed cache at the same point
  int64_t kv_bytes_allocated = 0;
  int64_t kv_bytes_peak = 0;
  int64_t kv_bytes_full_final = 0;  // the full cache once the whole sequence is in
  // The process's resident memory after the unit and its peak so far; -1 where
  // the system does not report it.
  int64_t process_bytes = -1;
  int64_t process_peak_bytes = -1;
  // GPU runs: the device's memory after the unit (caching allocator); -1 on the CPU.
  int64_t device_allocated_bytes = -1;
  int64_t device_peak_bytes = -1;
  int64_t device_reserved_bytes = -1;
  int64_t device_total_bytes = -1;
  double elapsed_ms = 0;
  // Masked models: the FLOPs this step executed (per image), the grid tokens whose
  // features it recomputed (-1: not reported) and whether the unconditional CFG
  // branch ran (false: LazyMAR's condition cache stood in for it).
  double flops = 0;
  int64_t recomputed_tokens = -1;
  bool unconditional_computed = true;
};

struct PolicyMarker {
  int64_t unit = 0;  // applies from the unit after this one
  QString policy;
  bool accepted = true;
  QString message;
};

class RunViewModel : public QObject {
  Q_OBJECT

 public:
  explicit RunViewModel(QObject* parent = nullptr);

  // Starts following `job` of `worker` (disconnects from any previous job).
  void track(GenerationWorker* worker, quint64 job, const kvs::GenerationRequest& request);
  void reset();
  // The model's family (until the started event names it) and its scales.
  void setModel(const kvs::ModelSummary& model);
  // The session will calibrate the model before its first unit (HeatKV on a VAR
  // bundle without heatkv_calibration.json, ScaleKV without its file): the window
  // says so while it runs. Null: no calibration.
  void setCalibrationPending(const kvs::FamilyDescription::FirstUseCalibration* calibration) {
    calibration_ = calibration ? std::optional(*calibration) : std::nullopt;
  }
  // The pending calibration (meaningful while calibrating()).
  const std::optional<kvs::FamilyDescription::FirstUseCalibration>& pendingCalibration() const { return calibration_; }

  // Event handlers (public so tests can feed events without a worker).
  void handleStarted(const kvs::StartedEvent& e);
  void handleProgress(const kvs::TokenProgressEvent& e);
  void handleUnit(const UnitDonePtr& e);
  void handlePolicyChanged(const kvs::PolicyChangedEvent& e);
  void handleFinished(const ResultPtr& result);
  void handleFailed(const QString& message, bool cancelled);
  void markCancelling();

  quint64 job() const { return job_; }
  RunState state() const { return state_; }
  bool active() const {
    return state_ == RunState::Loading || state_ == RunState::Running || state_ == RunState::Cancelling;
  }
  const kvs::GenerationRequest& request() const { return request_; }
  const kvs::StartedEvent& started() const { return started_; }

  int64_t tokensDone() const { return tokens_done_; }
  int64_t tokensTotal() const { return tokens_total_; }
  double tokensPerSecond() const { return tokens_per_second_; }
  double etaSeconds() const;  // < 0 when unknown
  double fraction() const;    // 0..1
  int64_t unitsDone() const { return units_done_; }
  int64_t unitsTotal() const { return started_.units_total; }
  // The family of this run: from the started event, else from setModel().
  const kvs::FamilyDescription& family() const;
  const ScaleLayout& scaleLayout() const { return scale_layout_; }
  // "line 3/16", "scale 4/10", "step 12/64" (the unit under way while running).
  QString unitProgressText() const;
  // Calibrating before the first unit (see setCalibrationPending).
  bool calibrating() const { return calibration_.has_value() && active() && units_done_ == 0; }
  // Masked models: the step (0-based) that predicted each grid token, -1 while
  // unknown; row-major over the token grid.
  const std::vector<int32_t>& generationStep() const { return generation_step_; }
  int64_t knownTokens() const;  // masked: grid tokens predicted so far
  // Next-scale models: row q = the attention mass that scale q's queries put on
  // each source scale (scale_maps.h), filled as the scales arrive; empty rows for
  // scales without an attention map.
  const std::vector<std::vector<double>>& scaleAttention() const { return scale_attention_; }
  // Text families: each condition position's readable text (StartedEvent::
  // condition_labels; empty for class models), and the share of the attention
  // the latest attention map's query gives each of them (weights[i] over the
  // condition positions, summing to 1; empty before the first map).
  const std::vector<std::string>& conditionLabels() const { return started_.condition_labels; }
  const std::vector<double>& promptAttention() const { return prompt_attention_; }
  int64_t currentRow() const;  // the token-grid row being generated (grid height when done)

  const QImage& preview() const { return preview_; }  // image 0; null before the first preview
  const UnitDonePtr& lastUnit() const { return last_unit_; }
  const std::vector<MemorySample>& memory() const { return memory_; }
  const QVector<PolicyMarker>& policyMarkers() const { return markers_; }
  QString activePolicy() const { return active_policy_; }
  // Image 0's entries evicted during the latest unit, per layer (summed over KV
  // heads), and during each unit over all layers (UnitDoneEvent::evicted_*).
  const std::vector<int64_t>& evictionsLastUnit() const;
  const std::vector<int64_t>& evictionsPerUnit() const { return evictions_per_unit_; }
  std::vector<int64_t> retainedPerHead(int64_t layer) const;  // from the latest masks; empty without masks

  const ResultPtr& result() const { return result_; }
  QString errorMessage() const { return error_; }

  double loadMs() const { return load_ms_; }  // submit -> started (model load, set-up)
  double lastUnitMs() const { return last_unit_ms_; }
  double meanUnitMs() const;
  double totalMs() const { return total_ms_; }

  static QImage toQImage(const kvs::RgbImage& image);

 Q_SIGNALS:
  void stateChanged(kvs::ui::RunState state);
  void progressChanged();
  void unitChanged();  // preview, maps, memory
  void policyMarkersChanged();
  void finished();
  void failed(const QString& message, bool cancelled);

 private:
  void setState(RunState s);
  void disconnectWorker();

  quint64 job_ = 0;
  RunState state_ = RunState::Idle;
  kvs::GenerationRequest request_;
  kvs::StartedEvent started_;
  int64_t tokens_done_ = 0, tokens_total_ = 0, units_done_ = 0;
  double tokens_per_second_ = 0, elapsed_ms_ = 0;
  QImage preview_;
  UnitDonePtr last_unit_;
  std::string model_family_;  // ModelSummary::family
  ScaleLayout scale_layout_;
  std::optional<kvs::FamilyDescription::FirstUseCalibration> calibration_;
  std::vector<int32_t> generation_step_;
  std::vector<std::vector<double>> scale_attention_;
  std::vector<double> prompt_attention_;
  std::vector<int64_t> evictions_per_unit_;
  std::vector<MemorySample> memory_;
  QVector<PolicyMarker> markers_;
  QString active_policy_;
  ResultPtr result_;
  QString error_;
  QElapsedTimer clock_;
  double load_ms_ = 0, last_unit_ms_ = 0, total_ms_ = 0, previous_unit_elapsed_ = 0;
  std::vector<QMetaObject::Connection> connections_;
};

}  // namespace kvs::ui

Q_DECLARE_METATYPE(kvs::ui::RunState)
