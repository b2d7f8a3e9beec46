#pragma once
// GenerationSession::run(request, sink): opens the bundle, hands the request to
// its family (engine/models/family_registry.h), keeps the loaded model for the
// next run on the same bundle and device, and reports how the run ended
// (FinishedEvent / FailedEvent). Cancellation and policy changes asked for from
// other threads reach the family's session at its next token / unit boundary.
// Torch-free header.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs {

namespace io {
struct ModelBundle;
}

class GenerationSession {
 public:
  GenerationSession();
  ~GenerationSession();

  // Runs to completion on the calling thread. Throws kvs::Error subclasses
  // (CancelledError after cancel()); a FailedEvent is emitted first.
  GenerationResult run(const GenerationRequest& request, EventSink* sink = nullptr);
  // The same with request.model_path's bundle already open (a command reads it
  // once).
  GenerationResult run(const io::ModelBundle& bundle, const GenerationRequest& request, EventSink* sink = nullptr);

  // Thread-safe; the running generation stops before its next token.
  void cancel() { cancel_requested_ = true; }

  // Thread-safe; a running generation switches to this policy spec at its next
  // unit boundary (the new policy adopts the cache as it stands) and reports a
  // PolicyChangedEvent. An invalid spec is refused there, the old policy stays.
  void request_policy_change(const std::string& spec);

 private:
  GenerationResult run_opened(const io::ModelBundle* bundle, const GenerationRequest& request, EventSink* sink);

  std::string loaded_key_;  // bundle folder @ device of loaded_
  std::unique_ptr<LoadedModel> loaded_;
  std::atomic<bool> cancel_requested_{false};
  std::mutex pending_mutex_;
  std::optional<std::string> pending_policy_;
};

}  // namespace kvs
