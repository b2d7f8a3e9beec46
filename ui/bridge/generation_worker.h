#pragma once
// The one worker thread that runs the engine (docs/design.md#threading). It owns a
// GenerationSession (so a model loads once and stays loaded), runs queued jobs
// one after another and turns the session's events into Qt signals emitted on
// the GUI thread. The GUI thread never runs model code.
//
// - Token progress is coalesced: at most one progress notification is in flight,
//   carrying the latest numbers, so a fast model cannot flood the event queue.
//   Unit (line) events are all delivered, in order.
// - cancelAll() stops the running job before its next token and drops queued
//   ones; the running job then reports jobFailed(cancelled = true).
// - shutdown() (also run by the destructor) cancels and joins: closing the
//   window mid-generation waits for the current token only.
#include <QObject>
#include <QString>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "ui/bridge/engine_types.h"

namespace kvs {
class GenerationSession;
}

namespace kvs::ui {

class GenerationWorker : public QObject {
  Q_OBJECT

 public:
  explicit GenerationWorker(QObject* parent = nullptr);
  ~GenerationWorker() override;

  // Queues a generation; returns its job id (ids start at 1).
  quint64 submit(const kvs::GenerationRequest& request);
  // Cancels the running job and drops the queued ones.
  void cancelAll();
  // The running job switches policy at its next line boundary (PolicyChangedEvent).
  void requestPolicyChange(const QString& spec);
  void shutdown();

  bool busy() const;                                            // a job is running or queued
  quint64 runningJob() const;                                   // 0 when none
  int pendingEvents() const { return pending_events_.load(); }  // posted, not yet delivered
  int maxPendingEvents() const { return max_pending_events_.load(); }

 Q_SIGNALS:
  void jobStarted(quint64 job, const kvs::StartedEvent& event);
  void tokenProgress(quint64 job, const kvs::TokenProgressEvent& event);
  void unitDone(quint64 job, const kvs::ui::UnitDonePtr& event);
  void policyChanged(quint64 job, const kvs::PolicyChangedEvent& event);
  void jobFinished(quint64 job, const kvs::ui::ResultPtr& result);
  void jobFailed(quint64 job, const QString& message, bool cancelled);
  void idle();  // the queue is empty and nothing runs

 private:
  struct Job {
    quint64 id = 0;
    kvs::GenerationRequest request;
  };
  class Sink;

  void threadMain();
  void runJob(const Job& job);
  void post(std::function<void()> deliver);
  void postProgress(quint64 job, const kvs::TokenProgressEvent& event);

  std::unique_ptr<kvs::GenerationSession> session_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  quint64 next_id_ = 1;
  std::atomic<quint64> running_job_{0};
  std::atomic<bool> cancel_running_{false};
  std::atomic<int> pending_events_{0};
  std::atomic<int> max_pending_events_{0};

  std::mutex progress_mutex_;
  std::optional<std::pair<quint64, kvs::TokenProgressEvent>> latest_progress_;
  bool progress_posted_ = false;
};

}  // namespace kvs::ui
