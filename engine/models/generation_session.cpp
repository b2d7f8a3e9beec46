#include "engine/models/generation_session.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <new>

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

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Gives the caching allocator's unused blocks back to the driver, so that the
// next, smaller attempt starts clean. Best effort; no-op without CUDA.
void release_cached_device_memory() {
  try {
    const auto accelerator = at::accelerator::getAccelerator(false);
    if (accelerator && *accelerator == c10::DeviceType::CUDA) at::accelerator::emptyCache();
  } catch (const std::exception&) {
  }
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
    const DeviceChoice device = choose_device(parse_device(request.device), request.threads,
                                              parse_run_dtype(request.dtype));
    std::optional<io::ModelBundle> read;
    if (!opened) read = io::ModelBundle::open(request.model_path);
    const io::ModelBundle& bundle = opened ? *opened : *read;
    const std::string key = bundle.dir + "@" + device.description;
    const ModelFamily& family = find_model_family(bundle.family());
    if (!request.image_size.empty() && !family.description().has_request_option("image_size"))
      throw InvalidArgumentError("model " + bundle.name() + " (" + family.description().display_name +
                                 ") writes images of one size: an image size does not apply");
    if (request.finishes_picture() && !family.description().has_request_option("from_image"))
      throw InvalidArgumentError("model " + bundle.name() + " (" + family.description().display_name +
                                 ") cannot finish a picture: only raster models whose bundle ships the VQ "
                                 "encoder (LlamaGen, Janus-Pro) can");
    if (loaded_key_ != key || !loaded_) {
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
  } catch (const c10::OutOfMemoryError& e) {
    // The device's memory ran out: its own error, so that callers can try a
    // smaller request; the allocator's cached blocks are given back first.
    release_cached_device_memory();
    const std::string what = "out of device memory: " + first_line(e.what_without_backtrace());
    emit(sink, FailedEvent{what, false});
    throw OutOfMemoryError(what);
  } catch (const std::bad_alloc&) {
    const std::string what = "out of host memory (a smaller batch or a compressed cache may fit)";
    emit(sink, FailedEvent{what, false});
    throw OutOfMemoryError(what);
  } catch (const std::exception& e) {
    // LibTorch errors (c10::Error) carry long backtraces: keep the first line.
    const std::string what = first_line(e.what());
    // The CPU allocator failing is an enforce failure, not c10's OutOfMemoryError:
    // the same error as a GPU's, with the allocator's own words.
    const auto at = what.find("DefaultCPUAllocator: ");
    if (at != std::string::npos) {
      const std::string oom = "out of host memory: " + what.substr(at + std::strlen("DefaultCPUAllocator: ")) +
                              " (a smaller batch or a compressed cache may fit)";
      emit(sink, FailedEvent{oom, false});
      throw OutOfMemoryError(oom);
    }
    emit(sink, FailedEvent{"internal error: " + what, false});
    throw Error("internal error: " + what);
  }
}

void GenerationSession::request_policy_change(const std::string& spec) {
  std::lock_guard<std::mutex> lock(pending_mutex_);
  pending_policy_ = spec;
}

}  // namespace kvs
