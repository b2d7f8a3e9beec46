#pragma once
// A comparison: the same class, seed and sampling run under 2-4 policy specs.
// The full cache is the reference: it is added first when not listed (like
// `kvstudio-cli bench`). When every pane has finished, the table compares each
// pane with the reference: KV bytes (masked models: FLOPs), tokens/s, token
// agreement, PSNR, SSIM (engine/metrics conventions). Token agreement is left
// out (NaN) for masked models: their "tokens" are continuous latents, and the
// result's token lists hold the generation order, which the seed alone fixes.
//
// Two schedules (CompareSchedule):
// - one after another on the window's worker (the model stays loaded): on a CPU,
//   where panes running at once would only share the same cores and every
//   pane's tokens/s would be distorted;
// - together: pane 0 on the window's worker, every other pane on a worker of its
//   own, so all panes stream at once — on a GPU, where a small batch leaves the
//   device mostly idle. Each extra worker's session loads its own copy of the
//   model; the extra workers (and those copies) are released as soon as the
//   comparison ends, so they hold no memory between comparisons. Tokens/s then
//   share the device, which the table's caption says.
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "engine/session/generation_request.h"
#include "ui/viewmodel/run_view_model.h"

namespace kvs::ui {

class GenerationWorker;

enum class CompareSchedule { OneAfterAnother, Together };

// The automatic choice: together when the run's device is a GPU ("cuda",
// "cuda:N", or "auto" with a GPU present), one after another otherwise.
CompareSchedule automaticCompareSchedule(const QString& device);
QString compareScheduleText(CompareSchedule schedule);

struct CompareRow {
  QString policy;
  bool reference = false;
  int64_t kvBytesFinal = 0;  // retained at the end
  int64_t kvBytesPeak = 0;
  int64_t kvBytesFull = 0;  // uncompressed equivalent
  double tokensPerSecond = 0;
  double tokenAgreement = 0;  // vs the reference, image 0
  double psnr = 0;            // +inf when identical
  double ssim = 0;
  double flops = 0;  // masked models: counted FLOPs per image; 0 otherwise
};

class CompareViewModel : public QObject {
  Q_OBJECT

 public:
  static constexpr int kMaxConfigs = 4;

  explicit CompareViewModel(GenerationWorker* worker, QObject* parent = nullptr);
  ~CompareViewModel() override;

  // Specs run in this order, "full" first (added when missing). Throws nothing:
  // returns an error message (empty on success) for fewer than 2 or more than 4
  // specs, or an invalid spec.
  // Specs whose policy does not serve `family` are refused with the registry's list.
  QString start(const QStringList& specs, const kvs::GenerationRequest& base, const kvs::FamilyDescription& family,
                CompareSchedule schedule = CompareSchedule::OneAfterAnother);
  void cancel();
  // Cancels and joins the extra workers of a comparison run together (the
  // window calls it before it goes away; the destructor does it too).
  void shutdown();

  bool running() const;
  CompareSchedule schedule() const { return schedule_; }
  int extraWorkerCount() const { return extra_workers_.size(); }
  // The most panes seen streaming at the same moment (a unit arrived while the
  // others were still mid-run): 1 one after another, up to paneCount() together.
  int maxPanesStreamingAtOnce() const { return max_streaming_; }
  int paneCount() const { return panes_.size(); }
  RunViewModel* pane(int i) const { return panes_.value(i); }
  QStringList specs() const { return specs_; }
  int referencePane() const { return 0; }
  const QVector<CompareRow>& rows() const { return rows_; }

  // Table rows from finished panes (public for tests).
  static QVector<CompareRow> computeRows(const QStringList& specs, const QVector<ResultPtr>& results,
                                         const kvs::FamilyDescription& family);
  const kvs::FamilyDescription& family() const { return *family_; }

 Q_SIGNALS:
  void panesChanged();
  void rowsChanged();
  void finished();
  void failed(const QString& message);

 private:
  void onPaneDone();
  GenerationWorker* workerForPane(int pane);
  void releaseExtraWorkers();

  GenerationWorker* worker_;
  CompareSchedule schedule_ = CompareSchedule::OneAfterAnother;
  QVector<GenerationWorker*> extra_workers_;  // owned; only while a comparison runs together
  QStringList specs_;
  QVector<RunViewModel*> panes_;
  QVector<CompareRow> rows_;
  int max_streaming_ = 0;
  const kvs::FamilyDescription* family_ = &familyDescription("");
};

}  // namespace kvs::ui
