#include "ui/viewmodel/run_view_model.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "ui/bridge/generation_worker.h"
#include "ui/viewmodel/scale_maps.h"

namespace kvs::ui {

QString runStateText(RunState state) {
  switch (state) {
    case RunState::Idle: return QStringLiteral("Ready");
    case RunState::Loading: return QStringLiteral("Loading model…");
    case RunState::Running: return QStringLiteral("Generating");
    case RunState::Cancelling: return QStringLiteral("Cancelling…");
    case RunState::Finished: return QStringLiteral("Done");
    case RunState::Cancelled: return QStringLiteral("Cancelled");
    case RunState::Failed: return QStringLiteral("Failed");
  }
  return {};
}

RunViewModel::RunViewModel(QObject* parent) : QObject(parent) { qRegisterMetaType<kvs::ui::RunState>(); }

void RunViewModel::disconnectWorker() {
  for (auto& c : connections_) QObject::disconnect(c);
  connections_.clear();
}

void RunViewModel::reset() {
  disconnectWorker();
  job_ = 0;
  request_ = {};
  started_ = {};
  tokens_done_ = tokens_total_ = units_done_ = 0;
  tokens_per_second_ = elapsed_ms_ = 0;
  preview_ = QImage();
  last_unit_.reset();
  generation_step_.clear();
  scale_attention_.clear();
  prompt_attention_.clear();
  evictions_per_unit_.clear();
  memory_.clear();
  markers_.clear();
  active_policy_.clear();
  result_.reset();
  error_.clear();
  load_ms_ = last_unit_ms_ = total_ms_ = previous_unit_elapsed_ = 0;
  setState(RunState::Idle);
  Q_EMIT progressChanged();
  Q_EMIT unitChanged();
  Q_EMIT policyMarkersChanged();
}

void RunViewModel::setModel(const kvs::ModelSummary& model) {
  model_family_ = model.family;
  scale_layout_.sides = model.scale_sides;
  scale_layout_.widths.clear();
}

const kvs::FamilyDescription& RunViewModel::family() const {
  return familyDescription(knownFamily(started_.family) ? started_.family : model_family_);
}

const std::vector<int64_t>& RunViewModel::evictionsLastUnit() const {
  static const std::vector<int64_t> none;
  return last_unit_ ? last_unit_->evicted_per_layer : none;
}

QString RunViewModel::unitProgressText() const {
  const int64_t total = started_.units_total;
  const int64_t current = state_ == RunState::Finished || !active() ? units_done_ : std::min(total, units_done_ + 1);
  return QStringLiteral("%1 %2/%3").arg(unitNoun(family())).arg(current).arg(total);
}

int64_t RunViewModel::knownTokens() const {
  return std::count_if(generation_step_.begin(), generation_step_.end(), [](int32_t s) { return s >= 0; });
}

void RunViewModel::track(GenerationWorker* worker, quint64 job, const kvs::GenerationRequest& request) {
  reset();
  job_ = job;
  request_ = request;
  active_policy_ = QString::fromStdString(request.policy.text());
  clock_.start();
  setState(RunState::Loading);
  if (!worker) return;
  auto mine = [this](quint64 j) { return j == job_; };
  connections_.push_back(
      connect(worker, &GenerationWorker::jobStarted, this, [=, this](quint64 j, const kvs::StartedEvent& e) {
        if (mine(j)) handleStarted(e);
      }));
  connections_.push_back(
      connect(worker, &GenerationWorker::tokenProgress, this, [=, this](quint64 j, const kvs::TokenProgressEvent& e) {
        if (mine(j)) handleProgress(e);
      }));
  connections_.push_back(connect(worker, &GenerationWorker::unitDone, this, [=, this](quint64 j, const UnitDonePtr& e) {
    if (mine(j)) handleUnit(e);
  }));
  connections_.push_back(
      connect(worker, &GenerationWorker::policyChanged, this, [=, this](quint64 j, const kvs::PolicyChangedEvent& e) {
        if (mine(j)) handlePolicyChanged(e);
      }));
  connections_.push_back(
      connect(worker, &GenerationWorker::jobFinished, this, [=, this](quint64 j, const ResultPtr& r) {
        if (mine(j)) handleFinished(r);
      }));
  connections_.push_back(
      connect(worker, &GenerationWorker::jobFailed, this, [=, this](quint64 j, const QString& m, bool c) {
        if (mine(j)) handleFailed(m, c);
      }));
}

void RunViewModel::setState(RunState s) {
  if (state_ == s) return;
  state_ = s;
  Q_EMIT stateChanged(s);
}

void RunViewModel::markCancelling() {
  if (active()) setState(RunState::Cancelling);
}

void RunViewModel::handleStarted(const kvs::StartedEvent& e) {
  started_ = e;
  tokens_total_ = e.tokens_total;
  // The run's own scales (an aspect ratio other than the model's default one has other grids).
  if (!e.unit_heights.empty() && e.unit_heights.size() == e.unit_widths.size()) {
    scale_layout_.sides = e.unit_heights;
    scale_layout_.widths = e.unit_widths;
  }
  // Families whose units predict tokens anywhere on the grid say which (predicted_positions).
  if (family().overlays.recomputed_tokens)
    generation_step_.assign(static_cast<size_t>(e.grid_height * e.grid_width), -1);
  load_ms_ = clock_.isValid() ? static_cast<double>(clock_.elapsed()) : 0;
  if (state_ != RunState::Cancelling) setState(RunState::Running);
  Q_EMIT progressChanged();
}

void RunViewModel::handleProgress(const kvs::TokenProgressEvent& e) {
  tokens_done_ = e.tokens_done;
  tokens_total_ = e.tokens_total;
  tokens_per_second_ = e.tokens_per_second;
  elapsed_ms_ = e.elapsed_ms;
  Q_EMIT progressChanged();
}

void RunViewModel::handleUnit(const UnitDonePtr& e) {
  if (!e) return;
  last_unit_ = e;
  units_done_ = e->unit_index + 1;
  last_unit_ms_ = e->elapsed_ms - previous_unit_elapsed_;
  previous_unit_elapsed_ = e->elapsed_ms;
  if (e->preview && !e->preview->empty()) preview_ = toQImage(e->preview->front());
  if (family().overlays.scale_matrix && e->attention && scale_layout_.scales() > 0 && e->unit_index >= 0) {
    if (scale_attention_.size() <= static_cast<size_t>(e->unit_index))
      scale_attention_.resize(static_cast<size_t>(e->unit_index) + 1);
    scale_attention_[static_cast<size_t>(e->unit_index)] = attentionMassByScale(*e->attention, scale_layout_);
  }
  if (!e->condition_attention.empty()) {
    // A cross-attention's shares (Infinity's text), one per label, already normalised.
    prompt_attention_.assign(e->condition_attention.begin(), e->condition_attention.end());
  } else if (e->attention && !started_.condition_labels.empty()) {
    const int64_t n = std::min<int64_t>({started_.condition_tokens, e->attention->positions,
                                         static_cast<int64_t>(started_.condition_labels.size()),
                                         static_cast<int64_t>(e->attention->weights.size())});
    std::vector<double> shares(static_cast<size_t>(std::max<int64_t>(0, n)));
    double sum = 0;
    for (size_t i = 0; i < shares.size(); ++i) sum += shares[i] = std::max(0.0, double{e->attention->weights[i]});
    if (sum > 0)
      for (double& v : shares) v /= sum;
    prompt_attention_ = std::move(shares);
  }
  for (int32_t p : e->predicted_positions)
    if (p >= 0 && static_cast<size_t>(p) < generation_step_.size())
      generation_step_[static_cast<size_t>(p)] = static_cast<int32_t>(e->unit_index);
  evictions_per_unit_.push_back(e->evicted_entries);
  MemorySample m;
  m.unit = e->unit_index;
  m.kv_bytes_logical = e->kv_bytes_logical;
  m.kv_bytes_full = e->kv_bytes_full_equivalent;
  m.kv_bytes_allocated = e->kv_bytes_allocated;
  m.kv_bytes_peak = e->kv_bytes_peak;
  m.kv_bytes_full_final = e->kv_bytes_full_final;
  m.process_bytes = e->process_resident_bytes.value_or(-1);
  m.process_peak_bytes = e->process_peak_resident_bytes.value_or(-1);
  if (e->device_memory && e->device_memory->available) {
    m.device_allocated_bytes = e->device_memory->allocated_bytes;
    m.device_peak_bytes = e->device_memory->peak_allocated_bytes;
    m.device_reserved_bytes = e->device_memory->reserved_bytes;
    m.device_total_bytes = e->device_memory->total_bytes;
  }
  m.elapsed_ms = e->elapsed_ms;
  m.flops = e->flops;
  if (!e->recomputed.empty())
    m.recomputed_tokens = std::count_if(e->recomputed.begin(), e->recomputed.end(), [](uint8_t r) { return r != 0; });
  m.unconditional_computed = e->unconditional_computed;
  memory_.push_back(m);
  if (!e->policy.empty()) active_policy_ = QString::fromStdString(e->policy);
  Q_EMIT unitChanged();
}

void RunViewModel::handlePolicyChanged(const kvs::PolicyChangedEvent& e) {
  markers_.push_back(
      PolicyMarker{e.unit_index, QString::fromStdString(e.policy), e.accepted, QString::fromStdString(e.message)});
  if (e.accepted) active_policy_ = QString::fromStdString(e.policy);
  Q_EMIT policyMarkersChanged();
}

void RunViewModel::handleFinished(const ResultPtr& result) {
  result_ = result;
  disconnectWorker();
  if (result) {
    tokens_done_ = tokens_total_ = result->tokens.empty() ? tokens_total_
                                                          : static_cast<int64_t>(result->tokens.front().size());
    tokens_per_second_ = result->tokens_per_second;
    total_ms_ = result->elapsed_ms;
    if (!result->images.empty()) preview_ = toQImage(result->images.front());
    active_policy_ = QString::fromStdString(result->policy);
  }
  setState(RunState::Finished);
  Q_EMIT progressChanged();
  Q_EMIT unitChanged();
  Q_EMIT finished();
}

void RunViewModel::handleFailed(const QString& message, bool cancelled) {
  disconnectWorker();
  error_ = cancelled ? QString() : message;
  setState(cancelled ? RunState::Cancelled : RunState::Failed);
  Q_EMIT progressChanged();
  Q_EMIT failed(message, cancelled);
}

double RunViewModel::etaSeconds() const {
  if (tokens_per_second_ <= 0 || tokens_total_ <= 0) return -1;
  return static_cast<double>(tokens_total_ - tokens_done_) / tokens_per_second_;
}

double RunViewModel::fraction() const {
  if (tokens_total_ <= 0) return 0;
  return std::clamp(static_cast<double>(tokens_done_) / static_cast<double>(tokens_total_), 0.0, 1.0);
}

int64_t RunViewModel::currentRow() const {
  if (started_.grid_width <= 0) return 0;
  return std::min<int64_t>(started_.grid_height, tokens_done_ / started_.grid_width);
}

double RunViewModel::meanUnitMs() const {
  if (memory_.empty()) return 0;
  return memory_.back().elapsed_ms / static_cast<double>(memory_.size());
}

std::vector<int64_t> RunViewModel::retainedPerHead(int64_t layer) const {
  std::vector<int64_t> out;
  if (!last_unit_ || !last_unit_->retained) return out;
  const kvs::RetainedMasks& m = *last_unit_->retained;
  if (layer < 0 || layer >= m.n_layer) return out;
  for (int64_t h = 0; h < m.kv_heads; ++h) {
    int64_t count = 0;
    for (int64_t w = 0; w < m.words(); ++w)
      count += std::popcount(m.bits[static_cast<size_t>((layer * m.kv_heads + h) * m.words() + w)]);
    out.push_back(count);
  }
  return out;
}

QImage RunViewModel::toQImage(const kvs::RgbImage& image) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() < static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3)
    return {};
  QImage view(image.pixels.data(), image.width, image.height, image.width * 3, QImage::Format_RGB888);
  return view.copy();
}

}  // namespace kvs::ui
