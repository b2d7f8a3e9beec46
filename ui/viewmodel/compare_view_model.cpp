#include "ui/viewmodel/compare_view_model.h"

#include <algorithm>
#include <limits>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/device.h"
#include "engine/metrics/image_metrics.h"
#include "ui/bridge/generation_worker.h"

namespace kvs::ui {

CompareSchedule automaticCompareSchedule(const QString& device) {
  if (device == QLatin1String("cuda") || device.startsWith(QLatin1String("cuda:"))) return CompareSchedule::Together;
  if (device == QLatin1String("auto") && kvs::cuda_available()) return CompareSchedule::Together;
  return CompareSchedule::OneAfterAnother;
}

QString compareScheduleText(CompareSchedule schedule) {
  return schedule == CompareSchedule::Together ? QStringLiteral("panes ran at once: tokens/s share the device")
                                               : QStringLiteral("panes ran one after another");
}

CompareViewModel::CompareViewModel(GenerationWorker* worker, QObject* parent) : QObject(parent), worker_(worker) {}

CompareViewModel::~CompareViewModel() { shutdown(); }

GenerationWorker* CompareViewModel::workerForPane(int pane) {
  if (schedule_ == CompareSchedule::OneAfterAnother || pane == 0 || !worker_) return worker_;
  auto* extra = new GenerationWorker(this);
  extra_workers_.push_back(extra);
  return extra;
}

void CompareViewModel::releaseExtraWorkers() {
  // Joining is quick here: the comparison has ended, so the threads are idle.
  for (GenerationWorker* w : extra_workers_) {
    w->shutdown();
    w->deleteLater();
  }
  extra_workers_.clear();
}

void CompareViewModel::shutdown() {
  for (GenerationWorker* w : extra_workers_) w->shutdown();
}

QString CompareViewModel::start(const QStringList& specs_in, const kvs::GenerationRequest& base,
                                const kvs::FamilyDescription& family, CompareSchedule schedule) {
  if (running()) return QStringLiteral("a comparison is already running");
  QStringList specs;
  for (const QString& s : specs_in) {
    const QString t = s.trimmed();
    if (t.isEmpty()) continue;
    const std::string problem = kvs::policy_spec_problem(t.toStdString());
    if (!problem.empty()) return QString::fromStdString(problem);
    const QString wrongFamily = policyFamilyProblem(t, family);
    if (!wrongFamily.isEmpty()) return wrongFamily;
    const QString canonical = QString::fromStdString(kvs::parse_policy_spec(t.toStdString()).text());
    if (!specs.contains(canonical)) specs << canonical;
  }
  if (specs.size() < 2) return QStringLiteral("pick at least 2 different policy configurations to compare");
  if (specs.size() > kMaxConfigs) return QStringLiteral("compare at most %1 policy configurations").arg(kMaxConfigs);
  specs.removeAll(QStringLiteral("full"));
  specs.prepend(QStringLiteral("full"));

  for (RunViewModel* p : panes_) p->deleteLater();
  panes_.clear();
  rows_.clear();
  releaseExtraWorkers();
  specs_ = specs;
  schedule_ = schedule;
  max_streaming_ = 0;
  family_ = &family;
  for (int i = 0; i < specs.size(); ++i) {
    const QString& spec = specs[i];
    kvs::GenerationRequest r = base;
    r.policy = kvs::parse_policy_spec(spec.toStdString());  // checked above
    auto* pane = new RunViewModel(this);
    panes_.push_back(pane);
    connect(pane, &RunViewModel::finished, this, &CompareViewModel::onPaneDone);
    connect(pane, &RunViewModel::unitChanged, this, [this] {
      int streaming = 0;
      for (const RunViewModel* p : panes_)
        if (p->state() == RunState::Running && p->unitsDone() > 0) ++streaming;
      max_streaming_ = std::max(max_streaming_, streaming);
    });
    connect(pane, &RunViewModel::failed, this, [this](const QString& message, bool cancelled) {
      if (!cancelled) Q_EMIT failed(message);
      onPaneDone();
    });
    GenerationWorker* worker = workerForPane(i);
    const quint64 job = worker ? worker->submit(r) : 0;
    pane->track(worker, job, r);
  }
  Q_EMIT panesChanged();
  Q_EMIT rowsChanged();
  return {};
}

void CompareViewModel::cancel() {
  if (!running()) return;
  for (RunViewModel* p : panes_) p->markCancelling();
  if (worker_) worker_->cancelAll();
  for (GenerationWorker* w : extra_workers_) w->cancelAll();
}

bool CompareViewModel::running() const {
  for (RunViewModel* p : panes_)
    if (p->active()) return true;
  return false;
}

void CompareViewModel::onPaneDone() {
  if (running()) return;
  releaseExtraWorkers();
  QVector<ResultPtr> results;
  for (RunViewModel* p : panes_) results.push_back(p->result());
  rows_ = computeRows(specs_, results, *family_);
  Q_EMIT rowsChanged();
  Q_EMIT finished();
}

QVector<CompareRow> CompareViewModel::computeRows(const QStringList& specs, const QVector<ResultPtr>& results,
                                                  const kvs::FamilyDescription& family) {
  QVector<CompareRow> rows;
  const ResultPtr reference = results.value(0);
  for (int i = 0; i < results.size(); ++i) {
    const ResultPtr& r = results[i];
    if (!r) continue;
    CompareRow row;
    row.policy = specs.value(i, QString::fromStdString(r->policy));
    row.reference = i == 0;
    row.kvBytesFinal = r->kv_bytes_logical_final;
    row.kvBytesPeak = r->kv_bytes_peak;
    row.kvBytesFull = r->kv_bytes_full;
    row.tokensPerSecond = r->tokens_per_second;
    row.flops = r->flops;
    row.tokenAgreement = std::numeric_limits<double>::quiet_NaN();
    row.psnr = row.ssim = std::numeric_limits<double>::quiet_NaN();
    if (reference && !reference->images.empty() && !r->images.empty()) {
      try {
        // Continuous tokens come back as the generation order: nothing to compare.
        if (!samplesContinuousTokens(family))
          row.tokenAgreement = kvs::token_agreement(reference->tokens.front(), r->tokens.front());
        row.psnr = kvs::psnr(reference->images.front(), r->images.front());
        row.ssim = kvs::ssim(reference->images.front(), r->images.front());
      } catch (const std::exception&) {
        // Different sizes cannot happen for one model; leave NaN if they do.
      }
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace kvs::ui
