#pragma once
// GenerationSession::run(request, sink): loads (and caches) the model, drives
// generation, emits typed events and returns the images. Torch-free header.
// The bundle's "family" picks the driver: "llamagen" (raster, one unit per token
// line), "var" (next-scale, one unit per scale: engine/session/scale_session.h)
// or "mar" (masked, one unit per decoding step: engine/session/masked_session.h).
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"

namespace kvs {



class GenerationSession {
 public:
  GenerationSession();
  ~GenerationSession();

  // Runs to completion on the calling thread. Throws kvs::Error subclasses
  // (CancelledError after cancel()); a FailedEvent is emitted first.
  GenerationResult run(const GenerationRequest& request, EventSink* sink = nullptr);

  // Thread-safe; the running generation stops before its next token.
  void cancel() { cancel_requested_ = true; }

  // Thread-safe; a running generation switches to this policy spec at its next
  // line (scale) boundary (the new policy adopts the cache as it stands) and reports a
  // PolicyChangedEvent. An invalid spec is refused there, the old policy stays.
  void request_policy_change(const std::string& spec);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> cancel_requested_{false};
  std::mutex pending_mutex_;
  std::optional<std::string> pending_policy_;
};

}  // namespace kvs
