#include "engine/models/generation_session.h"

#include <c10/core/InferenceMode.h>

#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/device_memory.h"
#include "engine/models/family_registry.h"

namespace kvs {
namespace {

void emit(EventSink* sink, const GenerationEvent& e) {
  if (sink) sink->on_event(e);
}

}  // namespace

GenerationSession::GenerationSession() = default;
GenerationSession::~GenerationSession() = default;

GenerationResult GenerationSession::run(const GenerationRequest& request, EventSink* sink) {
  return run_opened(nullptr, request, sink);
}

GenerationResult GenerationSession::run(const io::ModelBundle& bundle, const GenerationRequest& request,
                                        EventSink* sink) {
  return run_opened(&bundle, request, sink);
}

GenerationResult GenerationSession::run_opened(const io::ModelBundle* opened, const GenerationRequest& request,
                                               EventSink* sink) {
  cancel_requested_ = false;
  {
    // Changes asked for before this run are stale; those asked for once it has
    // begun (even before its StartedEvent reaches a listener) apply to it.
    std::lock_guard<std::mutex> lock(pending_mutex_);
    pending_policy_.reset();
  }
  auto log = module_logger("session");
  try {
    request.validate();
    const DeviceChoice device = choose_device(parse_device_kind(request.device), request.threads,
                                              parse_run_dtype(request.dtype));
    std::optional<io::ModelBundle> read;
    if (!opened) read = io::ModelBundle::open(request.model_path);
    const io::ModelBundle& bundle = opened ? *opened : *read;
    const std::string key = bundle.dir + "@" + device.description;
    if (loaded_key_ != key || !loaded_) {
      const ModelFamily& family = find_model_family(bundle.family());
      loaded_key_.clear();
      loaded_.reset();  // free the old weights before loading new ones
      loaded_ = family.load(bundle, device);
      loaded_key_ = key;
      log.info("loaded model " + bundle.name() + " (" + family.name() + ") on " + device.description);
    }
    const int cuda_index = device.kind == DeviceKind::Cuda ? device.cuda_index : -1;
    reset_device_memory_peak(cuda_index);  // this run's peak (the weights stay counted)
    RunContext context;
    context.sink = sink;
    context.bundle_dir = bundle.dir;
    context.device_description = device.description;
    context.cuda_index = cuda_index;
    context.cancelled = [this] { return cancel_requested_.load(); };
    context.take_policy_change = [this] {
      std::optional<std::string> change;
      std::lock_guard<std::mutex> lock(pending_mutex_);
      change.swap(pending_policy_);
      return change;
    };
    // Generation never differentiates: inference mode skips autograd's
    // bookkeeping (version counters, view tracking) on every operation.
    c10::InferenceMode inference;
    GenerationResult result = loaded_->run(request, context);
    emit(sink, FinishedEvent{result.elapsed_ms, result.flops});
    return result;
  } catch (const CancelledError& e) {
    emit(sink, FailedEvent{e.what(), true});
    throw;
  } catch (const Error& e) {
    emit(sink, FailedEvent{e.what(), false});
    throw;
  } catch (const std::exception& e) {
    // LibTorch errors (c10::Error) carry long backtraces: keep the first line.
    std::string what = e.what();
    const auto nl = what.find('\n');
    if (nl != std::string::npos) what = what.substr(0, nl);
    emit(sink, FailedEvent{"internal error: " + what, false});
    throw Error("internal error: " + what);
  }
}

void GenerationSession::request_policy_change(const std::string& spec) {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  pending_policy_ = spec;
}

}  // namespace kvs
