#pragma once
// A comparison: the same class, seed and sampling run under 2-4 policy specs,
// one after another on the one worker (the model stays loaded). The full cache is
// the reference: it is added first when not listed (like `kvstudio-cli bench`).
// When every pane has finished, the table compares each pane with the reference:
// KV bytes (masked models: FLOPs), tokens/s, token agreement, PSNR, SSIM
// (engine/metrics conventions). Token agreement is left out (NaN) for masked
// models: their "tokens" are continuous latents, and the result's token lists
// hold the generation order, which the seed alone fixes.
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "engine/session/generation_request.h"
#include "ui/viewmodel/run_view_model.h"

namespace kvs::ui {

class GenerationWorker;

struct CompareRow {
  QString policy;
  bool reference = false;
  int64_t kvBytesFinal = 0;  // retained at the end
  int64_t kvBytesPeak = 0;
  int64_t kvBytesFull = 0;   // uncompressed equivalent
  double tokensPerSecond = 0;
  double tokenAgreement = 0;  // vs the reference, image 0
  double psnr = 0;            // +inf when identical
  double ssim = 0;
  double flops = 0;           // masked models: counted FLOPs per image; 0 otherwise
};

class CompareViewModel : public QObject {
  Q_OBJECT

 public:
  static constexpr int kMaxConfigs = 4;

  explicit CompareViewModel(GenerationWorker* worker, QObject* parent = nullptr);

  // Specs run in this order, "full" first (added when missing). Throws nothing:
  // returns an error message (empty on success) for fewer than 2 or more than 4
  // specs, or an invalid spec.
  // Specs whose policy does not serve `family` are refused with the registry's list.
  QString start(const QStringList& specs, const kvs::GenerationRequest& base, ModelFamily family = ModelFamily::Raster);
  void cancel();

  bool running() const;
  int paneCount() const { return panes_.size(); }
  RunViewModel* pane(int i) const { return panes_.value(i); }
  QStringList specs() const { return specs_; }
  int referencePane() const { return 0; }
  const QVector<CompareRow>& rows() const { return rows_; }

  // Table rows from finished panes (public for tests).
  static QVector<CompareRow> computeRows(const QStringList& specs, const QVector<ResultPtr>& results,
                                         ModelFamily family = ModelFamily::Raster);
  ModelFamily family() const { return family_; }

 Q_SIGNALS:
  void panesChanged();
  void rowsChanged();
  void finished();
  void failed(const QString& message);

 private:
  void onPaneDone();

  GenerationWorker* worker_;
  QStringList specs_;
  QVector<RunViewModel*> panes_;
  QVector<CompareRow> rows_;
  ModelFamily family_ = ModelFamily::Raster;
};

}  // namespace kvs::ui
