#include "ui/bridge/generation_worker.h"

#include <QMetaObject>

#include <variant>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/models/generation_session.h"

namespace kvs::ui {

void registerEngineMetaTypes() {
  qRegisterMetaType<kvs::StartedEvent>();
  qRegisterMetaType<kvs::TokenProgressEvent>();
  qRegisterMetaType<kvs::PolicyChangedEvent>();
  qRegisterMetaType<kvs::GenerationRequest>();
  qRegisterMetaType<kvs::ui::UnitDonePtr>();
  qRegisterMetaType<kvs::ui::ResultPtr>();
}

// Runs on the worker thread, inside GenerationSession::run.
class GenerationWorker::Sink : public kvs::EventSink {
 public:
  Sink(GenerationWorker* worker, quint64 job) : worker_(worker), job_(job) {}

  void on_event(const kvs::GenerationEvent& event) override {
    // run() clears the session's cancel flag when it starts, so a cancel that
    // raced with the start is re-applied here (checked on every token).
    if (worker_->cancel_running_.load()) worker_->session_->cancel();
    GenerationWorker* w = worker_;
    const quint64 job = job_;
    if (const auto* e = std::get_if<kvs::StartedEvent>(&event)) {
      w->post([w, job, e = *e] { Q_EMIT w->jobStarted(job, e); });
    } else if (const auto* e = std::get_if<kvs::TokenProgressEvent>(&event)) {
      w->postProgress(job, *e);
    } else if (const auto* e = std::get_if<kvs::UnitDoneEvent>(&event)) {
      auto shared = std::make_shared<const kvs::UnitDoneEvent>(*e);
      w->post([w, job, shared] { Q_EMIT w->unitDone(job, shared); });
    } else if (const auto* e = std::get_if<kvs::PolicyChangedEvent>(&event)) {
      w->post([w, job, e = *e] { Q_EMIT w->policyChanged(job, e); });
    }
    // Finished / Failed: runJob reports them with the result or the exception.
  }

 private:
  GenerationWorker* worker_;
  quint64 job_;
};

GenerationWorker::GenerationWorker(QObject* parent)
    : QObject(parent), session_(std::make_unique<kvs::GenerationSession>()) {
  registerEngineMetaTypes();
  thread_ = std::thread([this] { threadMain(); });
}

GenerationWorker::~GenerationWorker() { shutdown(); }

quint64 GenerationWorker::submit(const kvs::GenerationRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  const quint64 id = next_id_++;
  queue_.push_back(Job{id, request});
  wake_.notify_one();
  return id;
}

void GenerationWorker::cancelAll() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(queue_);
    if (running_job_.load() != 0) {
      cancel_running_ = true;
      session_->cancel();
    }
  }
  for (const Job& job : dropped) {
    const quint64 id = job.id;
    post([this, id] { Q_EMIT jobFailed(id, QStringLiteral("generation cancelled"), true); });
  }
  if (!dropped.empty() && !busy()) post([this] { Q_EMIT idle(); });
}

void GenerationWorker::requestPolicyChange(const QString& spec) { session_->request_policy_change(spec.toStdString()); }

void GenerationWorker::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    queue_.clear();
    cancel_running_ = true;
    session_->cancel();
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

bool GenerationWorker::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_job_.load() != 0 || !queue_.empty();
}

quint64 GenerationWorker::runningJob() const { return running_job_.load(); }

void GenerationWorker::threadMain() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      cancel_running_ = false;
      running_job_ = job.id;
    }
    runJob(job);
    bool now_idle = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_job_ = 0;
      now_idle = queue_.empty() && !stopping_;
    }
    if (now_idle) post([this] { Q_EMIT idle(); });
  }
}

void GenerationWorker::runJob(const Job& job) {
  const quint64 id = job.id;
  auto log = kvs::module_logger("ui");
  Sink sink(this, id);
  try {
    auto result = std::make_shared<const kvs::GenerationResult>(session_->run(job.request, &sink));
    post([this, id, result] { Q_EMIT jobFinished(id, result); });
  } catch (const kvs::CancelledError&) {
    log.info("generation cancelled");
    post([this, id] { Q_EMIT jobFailed(id, QStringLiteral("generation cancelled"), true); });
  } catch (const std::exception& e) {
    const QString message = QString::fromStdString(e.what());
    log.error(e.what());
    post([this, id, message] { Q_EMIT jobFailed(id, message, false); });
  }
}

void GenerationWorker::post(std::function<void()> deliver) {
  const int depth = ++pending_events_;
  int seen = max_pending_events_.load();
  while (depth > seen && !max_pending_events_.compare_exchange_weak(seen, depth)) {
  }
  QMetaObject::invokeMethod(
      this,
      [this, deliver = std::move(deliver)] {
        --pending_events_;
        deliver();
      },
      Qt::QueuedConnection);
}

void GenerationWorker::postProgress(quint64 job, const kvs::TokenProgressEvent& event) {
  {
    std::lock_guard<std::mutex> lock(progress_mutex_);
    latest_progress_ = std::make_pair(job, event);
    if (progress_posted_) return;
    progress_posted_ = true;
  }
  post([this] {
    std::optional<std::pair<quint64, kvs::TokenProgressEvent>> latest;
    {
      std::lock_guard<std::mutex> lock(progress_mutex_);
      latest.swap(latest_progress_);
      progress_posted_ = false;
    }
    if (latest) Q_EMIT tokenProgress(latest->first, latest->second);
  });
}

}  // namespace kvs::ui
